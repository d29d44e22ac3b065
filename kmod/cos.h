/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cos.h — declarations shared by the files of cos.ko (not an ABI: that is uapi/linux/cos.h).
 */
#ifndef _KMOD_COS_H
#define _KMOD_COS_H

#include <linux/cos.h>

/* cos_kfuncs.c */
int cos_kfuncs_init(void);

#endif /* _KMOD_COS_H */
