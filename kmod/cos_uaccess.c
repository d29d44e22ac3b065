// SPDX-License-Identifier: GPL-2.0
/*
 * cos_uaccess.c — copying ioctl arguments in and out of user space: the extensible-struct
 * contract of uapi/linux/cos.h (a leading size, zero-extended or zero-tailed), and CPU masks.
 * Calls nothing else in cos.ko.  Context: process context, may fault; never under cos_lock.
 * See docs/abi.md, "Versions, features and extensible structs".
 */
#include <linux/bitmap.h>
#include <linux/cpumask.h>
#include <linux/uaccess.h>

#include "cos_internal.h"

/*
 * cos_user_size - read and check the leading @size of an extensible ioctl struct.
 * Returns the size or a negative errno: -EFAULT for a bad pointer, -EINVAL for a size that is not
 * a multiple of 8, below @min_size or above COS_STRUCT_SIZE_MAX.
 */
long cos_user_size(const void __user *uarg, size_t min_size)
{
	u32 usize;

	if (get_user(usize, (const u32 __user *)uarg))
		return -EFAULT;
	if (usize < min_size || usize > COS_STRUCT_SIZE_MAX || usize % 8)
		return -EINVAL;
	return usize;
}

/*
 * cos_copy_in - copy an extensible struct from user space (copy_struct_from_user semantics:
 * a shorter struct is zero-extended; a longer one must have a zero tail, else -E2BIG).
 */
int cos_copy_in(void *kbuf, u32 ksize, const void __user *uarg, u32 usize)
{
	return copy_struct_from_user(kbuf, ksize, uarg, usize);
}

/*
 * cos_copy_out - copy a filled extensible struct back to user space.
 * @kbuf/@ksize: the module's struct, whose first u32 is @size; @usize: the caller's size.
 * Writes min(@usize, @ksize) bytes with @size set to that count and zeroes the caller's tail.
 */
int cos_copy_out(void __user *uarg, u32 usize, void *kbuf, u32 ksize)
{
	u32 n = min(usize, ksize);

	*(u32 *)kbuf = n;
	if (copy_to_user(uarg, kbuf, n))
		return -EFAULT;
	if (usize > n && clear_user(uarg + n, usize - n))
		return -EFAULT;
	return 0;
}

/* Copy a user CPU bitmap of @size bytes into @mask; bits past nr_cpu_ids must be clear. */
int cos_copy_cpumask(struct cpumask *mask, const void __user *umask, u32 size)
{
	u32 ksize = BITS_TO_LONGS(nr_cpu_ids) * sizeof(long);
	u32 n = min(size, ksize);
	int cpu;

	if (!size || size > COS_STRUCT_SIZE_MAX * 16)
		return -EINVAL;
	cpumask_clear(mask);
	if (copy_from_user(cpumask_bits(mask), umask, n))
		return -EFAULT;
	if (size > ksize) {
		int zero = check_zeroed_user(umask + ksize, size - ksize);

		if (zero <= 0)
			return zero ?: -EINVAL;
	}
	cpu = find_next_bit(cpumask_bits(mask), n * BITS_PER_BYTE, nr_cpu_ids);
	return cpu < n * BITS_PER_BYTE ? -EINVAL : 0;
}
