// SPDX-License-Identifier: GPL-2.0
/*
 * cos_main.c — cos.ko: module load/unload and the /dev/cos misc device (open, ioctl dispatch),
 * COS_IOC_GET_INFO, and the debugfs fault injection.
 *
 * /dev/cos is mode 0600 and open() also requires CAP_SYS_NICE, so a mode change by an admin
 * does not hand scheduling control to unprivileged users.  Each ioctl argument is an
 * extensible struct (uapi/linux/cos.h); cos_uaccess.c holds that contract.
 * See docs/design.md, "Which file owns what".
 */
#define pr_fmt(fmt) "cos: " fmt

#include <linux/capability.h>
#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/kthread.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/version.h>

#include "cos_internal.h"

#define CREATE_TRACE_POINTS
#include "cos_trace.h"

/**
 * cos_ioc_get_info() - COS_IOC_GET_INFO: report ABI version, features, CPU id range, the lord
 * and the module's counters.
 * @uarg: user pointer to struct cos_info
 *
 * Context: process context, may fault; takes cos_lock (IRQs off) for the lords
 * (cos_lord_info()); reads the counters lock-free; copies out after dropping it.
 * Return: 0, -EINVAL for an unknown size, -EFAULT for a bad pointer.
 */
static long cos_ioc_get_info(void __user *uarg)
{
	struct cos_info info = {
		.abi_version = COS_ABI_VERSION,
		.features = COS_FEAT_KFUNCS | COS_FEAT_CPU_MSGS | COS_FEAT_WAKE_RULES |
			    COS_FEAT_SHOOT_REPLACE | COS_FEAT_SHOOT_LATCH | COS_FEAT_LAZY_WAKE |
			    COS_FEAT_WAKER | COS_FEAT_ENCLAVE_NAMES | COS_FEAT_ENCLAVES |
			    COS_FEAT_WAKE_HANDOFF | COS_FEAT_WAKE_HANDOFF_BLOCK |
			    COS_FEAT_WAKE_PREEMPT | COS_FEAT_WAKE_NEXT |
			    (READ_ONCE(cos_shim_attached) ? COS_FEAT_SHIM_ATTACHED : 0) |
			    (READ_ONCE(cos_shim_caps) & COS_SHIM_CAP_FAIR_DSQ ? COS_FEAT_LORD : 0) |
			    (READ_ONCE(cos_shim_caps) & COS_SHIM_CAP_BANDWIDTH ? COS_FEAT_BANDWIDTH : 0),
		.nr_cpu_ids = nr_cpu_ids,
		.kernel_version = LINUX_VERSION_CODE,
		.max_tasks = cos_max_tasks,
	};
	long usize = cos_user_size(uarg, COS_INFO_SIZE_VER0);
	int cpu;

	if (usize < 0)
		return usize;

	cos_lord_info(&info);
	/* counters since load: each read once, the whole not one snapshot */
	info.tasks = READ_ONCE(cos_counters.tasks);
	info.messages = cos_messages_total();
	for_each_possible_cpu(cpu) {
		const struct cos_shoot_counts *c = per_cpu_ptr(&cos_shoot_counts, cpu);

		info.placed += READ_ONCE(c->placed);
		info.refused += READ_ONCE(c->refused);
	}
	info.fallbacks = atomic64_read(&cos_counters.fallbacks);
	info.stalls = atomic64_read(&cos_counters.stalls);
	info.dropped = cos_dropped_total();
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
	case _IOC_NR(COS_IOC_REGISTER_LORD):
		return cos_ioc_register_lord(file, uarg);
	case _IOC_NR(COS_IOC_SHOOT):
		return cos_ioc_shoot(file, uarg);
	case _IOC_NR(COS_IOC_WAIT):
		return cos_ioc_wait(file, uarg);
	case _IOC_NR(COS_IOC_UNREGISTER):
		return cos_ioc_unregister(file);
	/*
	 * The task and group lists name every COS task's pid and comm: only for a caller who
	 * could open /dev/cos itself, not any holder of a passed file.
	 */
	case _IOC_NR(COS_IOC_GET_TASKS):
		return capable(CAP_SYS_NICE) ? cos_ioc_get_tasks(uarg) : -EPERM;
	case _IOC_NR(COS_IOC_GET_GROUPS):
		return capable(CAP_SYS_NICE) ? cos_ioc_get_groups(uarg) : -EPERM;
	case _IOC_NR(COS_IOC_GET_ENCLAVES):
		return cos_ioc_get_enclaves(uarg);
	/* attaching a sched_ext scheduler needs CAP_SYS_ADMIN: naming the one to serve too */
	case _IOC_NR(COS_IOC_SHIM_BIND):
		return capable(CAP_SYS_ADMIN) ? cos_ioc_shim_bind(uarg) : -EPERM;
	default:
		return -ENOTTY;
	}
}

static int cos_open(struct inode *inode, struct file *file)
{
	if (!capable(CAP_SYS_NICE))
		return -EPERM;
	file->private_data = NULL;	/* the enclave, once this file registers a lord */
	return 0;
}

static int cos_release(struct inode *inode, struct file *file)
{
	cos_lord_release(file);
	return 0;
}

static const struct file_operations cos_fops = {
	.owner = THIS_MODULE,
	.open = cos_open,
	.release = cos_release,
	.mmap = cos_lord_mmap,
	.unlocked_ioctl = cos_ioctl,
	.uring_cmd = cos_uring_cmd,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice cos_miscdev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = COS_DEVICE_NAME,
	.fops = &cos_fops,
	.mode = 0600,
};

/*
 * debugfs cos/: fault injection for the tests (root only).
 * hold_dispatch: a CPU whose ops.dispatch leaves its pending shoot alone, -1 for none
 * (cos_hold_dispatch()).
 * group_init_fail: how many of the next cgroup inits fail with -ENOMEM (cos_group.c).
 * bw_stop_at_tick: throttled groups' tasks stop at their next tick only (cos_group.c).
 * bw_no_reserve: a CPU reserves no budget up front; its timer is armed for its share of it.
 * no_displaced_resume: a task an urgent one displaced waits for the lord instead of resuming
 * from the latch (cos_task.c), for benchmarks.
 * enclaves: the enclaves allocated and not yet freed (read only: 0 once every lord file is
 * closed).  delay_register_us, delay_release_us, delay_exit_work_us: sleeps that widen the
 * race windows of a lord's life (cos_lord.c) for the tests.  delay_latch_take_us: a spin in
 * ops.dispatch between the latch's peek and its disarm (cos_cpu.c).
 * spin_kthread, spin_nopreempt: busy kthreads (below).
 */
static struct dentry *cos_debugfs;

static int cos_hold_get(void *data, u64 *val)
{
	*val = (u64)(s64)cos_held_cpu();
	return 0;
}

static int cos_hold_set(void *data, u64 val)
{
	return cos_hold_dispatch((int)(s64)val);
}

/* signed: the unsigned form would reject "-1" (release) */
DEFINE_DEBUGFS_ATTRIBUTE_SIGNED(cos_hold_fops, cos_hold_get, cos_hold_set, "%lld\n");

/*
 * spin_kthread: write "CPU MS" to start a per-CPU kthread that runs on CPU for MS ms (at most
 * 10 s), calling cond_resched() (what a busy ksoftirqd looks like to the scheduler).  It holds
 * a module reference until it exits.
 */
static int cos_spin_fn(void *data)
{
	unsigned long end = jiffies + msecs_to_jiffies((unsigned long)data);

	while (time_before(jiffies, end))
		cond_resched();
	module_put_and_kthread_exit(0);
}

/* A debugfs write of @len bytes at @ubuf into @buf (NUL-terminated), or -EINVAL, -EFAULT. */
static int cos_dbg_read(char *buf, size_t size, const char __user *ubuf, size_t len)
{
	if (len >= size)
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = 0;
	return 0;
}

/* "CPU MS" of a spin file: an online CPU and at most @max_ms; false if not. */
static bool cos_dbg_cpu_ms(const char *buf, unsigned int max_ms, unsigned int *cpu,
			   unsigned int *ms)
{
	return sscanf(buf, "%u %u", cpu, ms) == 2 && *cpu < nr_cpu_ids && cpu_online(*cpu) &&
	       *ms <= max_ms;
}

/*
 * Start @fn(@data) in a kthread bound to @cpu, holding a module reference that @fn drops as it
 * exits (module_put_and_kthread_exit()).  0 or a negative errno.
 */
static int cos_dbg_kthread(int (*fn)(void *), void *data, unsigned int cpu, const char *name)
{
	struct task_struct *k;

	if (!try_module_get(THIS_MODULE))
		return -ENODEV;
	k = kthread_create_on_cpu(fn, data, cpu, name);
	if (IS_ERR(k)) {
		module_put(THIS_MODULE);
		return PTR_ERR(k);
	}
	wake_up_process(k);
	return 0;
}

static ssize_t cos_spin_write(struct file *file, const char __user *ubuf, size_t len,
			      loff_t *ppos)
{
	unsigned int cpu, ms;
	char buf[32];
	int ret = cos_dbg_read(buf, sizeof(buf), ubuf, len);

	if (!ret && !cos_dbg_cpu_ms(buf, 10000, &cpu, &ms))
		ret = -EINVAL;
	if (!ret)
		ret = cos_dbg_kthread(cos_spin_fn, (void *)(unsigned long)ms, cpu, "cos_spin/%u");
	return ret ?: len;
}

static const struct file_operations cos_spin_fops = {
	.owner = THIS_MODULE,
	.write = cos_spin_write,
	.llseek = noop_llseek,
};

/*
 * spin_nopreempt: write "CPU MS" to start a kthread that spins on CPU with preemption disabled
 * for MS ms (at most 5 s, well below the soft-lockup detector's threshold), or until "stop" is
 * written (-ESRCH if none spins).  The write returns once it spins.  One at a time (-EBUSY).  A long non-preemptible
 * kernel section: what is woken or shot onto that CPU meanwhile waits for its end, which holds
 * a CPU between a wake-up's enqueue and the switch to it (test_stuck's wake-placed shoot).
 */
static atomic_t cos_nopreempt_busy = ATOMIC_INIT(0);
static bool cos_nopreempt_stop;

struct cos_nopreempt {
	unsigned long ms;
	struct completion spinning;
};

static int cos_nopreempt_fn(void *data)
{
	struct cos_nopreempt *arg = data;
	unsigned long end = jiffies + msecs_to_jiffies(arg->ms);

	preempt_disable();
	complete(&arg->spinning);	/* @arg is the writer's: not touched after this */
	while (time_before(jiffies, end) && !READ_ONCE(cos_nopreempt_stop))
		cpu_relax();
	preempt_enable();
	atomic_set(&cos_nopreempt_busy, 0);
	module_put_and_kthread_exit(0);
}

static ssize_t cos_nopreempt_write(struct file *file, const char __user *ubuf, size_t len,
				   loff_t *ppos)
{
	struct cos_nopreempt arg;
	unsigned int cpu, ms;
	char buf[32];
	int ret = cos_dbg_read(buf, sizeof(buf), ubuf, len);

	if (ret)
		return ret;
	if (sysfs_streq(buf, "stop")) {
		if (!atomic_read(&cos_nopreempt_busy))
			return -ESRCH;	/* over already: the test's window closed early */
		WRITE_ONCE(cos_nopreempt_stop, true);
		return len;
	}
	if (!cos_dbg_cpu_ms(buf, 5000, &cpu, &ms))
		return -EINVAL;
	if (atomic_cmpxchg(&cos_nopreempt_busy, 0, 1))
		return -EBUSY;
	WRITE_ONCE(cos_nopreempt_stop, false);
	arg.ms = ms;
	init_completion(&arg.spinning);
	ret = cos_dbg_kthread(cos_nopreempt_fn, &arg, cpu, "cos_nopreempt/%u");
	if (ret) {
		atomic_set(&cos_nopreempt_busy, 0);
		return ret;
	}
	wait_for_completion(&arg.spinning);
	return len;
}

static const struct file_operations cos_nopreempt_fops = {
	.owner = THIS_MODULE,
	.write = cos_nopreempt_write,
	.llseek = noop_llseek,
};

static int __init cos_init(void)
{
	int ret;

	/* The ABI's sizes, as the header documents them. */
	BUILD_BUG_ON(sizeof(struct cos_info) != COS_INFO_SIZE_VER3);
	BUILD_BUG_ON(sizeof(struct cos_msg) != 64);
	BUILD_BUG_ON(sizeof(struct cos_task_status) != 48);
	BUILD_BUG_ON(sizeof(struct cos_shoot_slot) != 128);
	BUILD_BUG_ON(sizeof(struct cos_lord_args) != COS_LORD_ARGS_SIZE_VER1);
	BUILD_BUG_ON(sizeof(struct cos_enclaves_args) != COS_ENCLAVES_ARGS_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct cos_enclave_info) != 224);
	BUILD_BUG_ON(offsetofend(struct cos_enclave_info, fallbacks) != COS_ENCLAVE_INFO_SIZE_MIN);
	BUILD_BUG_ON(sizeof(struct cos_shoot_args) != COS_SHOOT_ARGS_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct cos_wait_args) != COS_WAIT_ARGS_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct cos_tasks_args) != COS_TASKS_ARGS_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct cos_uring_shoot) != 16);
	BUILD_BUG_ON(offsetof(struct cos_ctl, produced) != 64);	/* the lord's half, then the module's */
	BUILD_BUG_ON(sizeof(struct cos_task_info) != 80);
	BUILD_BUG_ON(sizeof(struct cos_group_info) != 96);
	BUILD_BUG_ON(sizeof(struct cos_groups_args) != COS_GROUPS_ARGS_SIZE_VER0);

	if (cos_max_tasks < 64 || cos_max_tasks > (1U << 20)) {
		pr_err("max_tasks=%u is outside 64..1048576\n", cos_max_tasks);
		return -EINVAL;
	}
	ret = cos_tasks_init();
	if (ret)
		return ret;
	cos_groups_init(&cos_task_group_hooks);
	ret = cos_kfuncs_init();
	if (ret)
		goto err_tasks;
	ret = misc_register(&cos_miscdev);
	if (ret) {
		pr_err("cannot register /dev/%s: %d\n", COS_DEVICE_NAME, ret);
		goto err_tasks;
	}
	cos_debugfs = debugfs_create_dir("cos", NULL);	/* errors ignored, as debugfs wants */
	debugfs_create_file_unsafe("hold_dispatch", 0600, cos_debugfs, NULL, &cos_hold_fops);
	debugfs_create_bool("bw_stop_at_tick", 0600, cos_debugfs, &cos_bw_stop_at_tick);
	debugfs_create_bool("bw_no_reserve", 0600, cos_debugfs, &cos_bw_no_reserve);
	debugfs_create_bool("no_displaced_resume", 0600, cos_debugfs, &cos_no_displaced_resume);
	debugfs_create_atomic_t("group_init_fail", 0600, cos_debugfs, &cos_group_init_fail);
	debugfs_create_atomic_t("enclaves", 0400, cos_debugfs, &cos_enclaves_live);
	debugfs_create_u32("delay_register_us", 0600, cos_debugfs, &cos_delay_register_us);
	debugfs_create_u32("delay_release_us", 0600, cos_debugfs, &cos_delay_release_us);
	debugfs_create_u32("delay_exit_work_us", 0600, cos_debugfs, &cos_delay_exit_work_us);
	debugfs_create_u32("delay_latch_take_us", 0600, cos_debugfs, &cos_delay_latch_take_us);
	debugfs_create_file("spin_kthread", 0200, cos_debugfs, NULL, &cos_spin_fops);
	debugfs_create_file("spin_nopreempt", 0200, cos_debugfs, NULL, &cos_nopreempt_fops);
	return 0;

err_tasks:
	cos_groups_exit();
	cos_tasks_exit();
	return ret;
}

/* Runs only when no file is open and no BPF program references the module. */
static void __exit cos_exit(void)
{
	debugfs_remove(cos_debugfs);
	misc_deregister(&cos_miscdev);
	cos_groups_exit();
	cos_tasks_exit();
}

module_init(cos_init);
module_exit(cos_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("cos: user-space delegated CPU scheduling on sched_ext");
MODULE_VERSION(__stringify(COS_ABI_VERSION));
