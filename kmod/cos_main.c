// SPDX-License-Identifier: GPL-2.0
/*
 * cos_main.c — cos.ko: module load/unload and the /dev/cos misc device (open, ioctl dispatch).
 *
 * /dev/cos is mode 0600 and open() also requires CAP_SYS_NICE, so a mode change by an admin does
 * not hand scheduling control to unprivileged users.  Each ioctl argument is an extensible struct
 * (see the top of uapi/linux/cos.h); cos_copy_args() holds that contract in one place.
 */
#define pr_fmt(fmt) "cos: " fmt

#include <linux/capability.h>
#include <linux/cpumask.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/uaccess.h>
#include <linux/version.h>

#include "cos.h"

/*
 * cos_user_size - read and check the leading @size of an extensible ioctl struct.
 * Returns the size or a negative errno: -EFAULT for a bad pointer, -EINVAL for a size that is not
 * a multiple of 8, below @min_size or above COS_STRUCT_SIZE_MAX.
 */
static long cos_user_size(const void __user *uarg, size_t min_size)
{
	u32 usize;

	if (get_user(usize, (const u32 __user *)uarg))
		return -EFAULT;
	if (usize < min_size || usize > COS_STRUCT_SIZE_MAX || usize % 8)
		return -EINVAL;
	return usize;
}

/*
 * cos_copy_out - copy a filled extensible struct back to user space.
 * @kbuf/@ksize: the module's struct, whose first u32 is @size; @usize: the caller's size.
 * Writes min(@usize, @ksize) bytes with @size set to that count and zeroes the caller's tail.
 */
static int cos_copy_out(void __user *uarg, u32 usize, void *kbuf, u32 ksize)
{
	u32 n = min(usize, ksize);

	*(u32 *)kbuf = n;
	if (copy_to_user(uarg, kbuf, n))
		return -EFAULT;
	if (usize > n && clear_user(uarg + n, usize - n))
		return -EFAULT;
	return 0;
}

/**
 * cos_ioc_get_info() - COS_IOC_GET_INFO: report ABI version, features and CPU id range.
 * @uarg: user pointer to struct cos_info
 *
 * Context: process context, may fault; takes no locks.
 * Return: 0, -EINVAL for an unknown size, -EFAULT for a bad pointer.
 */
static long cos_ioc_get_info(void __user *uarg)
{
	struct cos_info info = {
		.abi_version = COS_ABI_VERSION,
		.features = COS_FEAT_KFUNCS,
		.nr_cpu_ids = nr_cpu_ids,
		.kernel_version = LINUX_VERSION_CODE,
	};
	long usize = cos_user_size(uarg, COS_INFO_SIZE_VER0);

	if (usize < 0)
		return usize;
	return cos_copy_out(uarg, usize, &info, sizeof(info));
}

static long cos_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	/* Ignore the size bits: the struct carries its own size (uapi/linux/cos.h). */
	if (_IOC_TYPE(cmd) != COS_IOC_MAGIC)
		return -ENOTTY;
	switch (_IOC_NR(cmd)) {
	case _IOC_NR(COS_IOC_GET_INFO):
		return cos_ioc_get_info(uarg);
	default:
		return -ENOTTY;
	}
}

static int cos_open(struct inode *inode, struct file *file)
{
	if (!capable(CAP_SYS_NICE))
		return -EPERM;
	return 0;
}

static const struct file_operations cos_fops = {
	.owner = THIS_MODULE,
	.open = cos_open,
	.unlocked_ioctl = cos_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice cos_miscdev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = COS_DEVICE_NAME,
	.fops = &cos_fops,
	.mode = 0600,
};

static int __init cos_init(void)
{
	int ret;

	ret = cos_kfuncs_init();
	if (ret)
		return ret;
	ret = misc_register(&cos_miscdev);
	if (ret) {
		pr_err("cannot register /dev/%s: %d\n", COS_DEVICE_NAME, ret);
		return ret;
	}
	return 0;
}

static void __exit cos_exit(void)
{
	misc_deregister(&cos_miscdev);
}

module_init(cos_init);
module_exit(cos_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("cos: user-space delegated CPU scheduling on sched_ext");
MODULE_VERSION(__stringify(COS_ABI_VERSION));
