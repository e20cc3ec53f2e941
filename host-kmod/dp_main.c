// SPDX-License-Identifier: GPL-2.0
/*
 * domprof kernel collector: /dev/domprof, the counters and CPU hotplug.
 *
 * One perf counter per online CPU samples into that CPU's ring
 * (dp_sample.c).  The daemon configures and enables sampling with the
 * ioctls of include/domprof/kmod.h and reads the raw stream
 * (include/domprof/raw.h) from the device.  host-kmod/README.md tells the
 * whole story.
 *
 * Locking: dp_lock serializes the configuration, enable/disable and the
 * reader.  The CPU hotplug callbacks must not take it (enable holds it
 * while it takes the hotplug lock); they are serialized against enable
 * and disable by the hotplug lock itself, which both take for reading
 * around every change of dp_enabled and of the counters.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/timer.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>

#include "domprof.h"

DEFINE_PER_CPU(struct dp_cpu, dp_cpus);

static DEFINE_MUTEX(dp_lock);
static struct dp_kmod_config dp_cfg = {
	.abi = DP_KMOD_ABI,
	.event = DP_KMOD_EV_AUTO,
	.period = DP_KMOD_DEF_PERIOD,
	.clock_ns = DP_KMOD_DEF_CLOCK_NS,
	.ring_entries = DP_KMOD_DEF_RING,
	.flags = DP_KMOD_CF_KERNEL | DP_KMOD_CF_USER,
};
static bool dp_enabled;		/* written under dp_lock + hotplug lock */
static u32 dp_event;		/* the event in use, valid while enabled */
static u64 dp_start_ns;
static unsigned int dp_gen;	/* one per enable: a new stream */
static int dp_hp_state;
static unsigned long dp_open_bit;
static DECLARE_WAIT_QUEUE_HEAD(dp_wait);
static struct timer_list dp_timer;

/* The reader is woken by a timer, never by the handler: NMI cannot. */
#define DP_WAKE_JIFFIES		(HZ / 20)
/* Entries taken from one CPU before the reader moves to the next. */
#define DP_BATCH		64

struct dp_file {
	struct dp_stream s;
	unsigned int gen;
	unsigned int next_cpu;
	u8 rec[DP_REC_MAX];	/* one encoded entry: too big for the stack */
};

static bool dp_ring_pending(struct dp_cpu *c)
{
	/* pairs with the release that publishes a new ring */
	if (!smp_load_acquire(&c->ring))
		return false;
	/* pairs with the handler's release of head */
	return smp_load_acquire(&c->head) != c->tail ||
	       READ_ONCE(c->lost) != c->lost_reported;
}

static bool dp_any_pending(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		if (dp_ring_pending(per_cpu_ptr(&dp_cpus, cpu)))
			return true;
	return false;
}

static void dp_timer_fn(struct timer_list *t)
{
	if (dp_any_pending())
		wake_up_interruptible(&dp_wait);
	if (READ_ONCE(dp_enabled))
		mod_timer(&dp_timer, jiffies + DP_WAKE_JIFFIES);
}

/* Called with the hotplug lock held (enable, or the online callback). */
static int dp_cpu_start(unsigned int cpu, u32 event)
{
	struct dp_cpu *c = per_cpu_ptr(&dp_cpus, cpu);
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.pinned = 1,
		.exclude_kernel = !(dp_cfg.flags & DP_KMOD_CF_KERNEL),
		.exclude_user = !(dp_cfg.flags & DP_KMOD_CF_USER),
	};
	struct perf_event *ev;

	if (c->event)
		return 0;
	if (dp_cfg.callgraph_depth && !c->cc) {
		u64 *cc;

		cc = vzalloc(array3_size(dp_cfg.ring_entries,
					 dp_cfg.callgraph_depth + 1, sizeof(u64)));
		if (!cc)
			return -ENOMEM;
		c->cc_words = dp_cfg.callgraph_depth + 1;
		/* ring slots written before this have no chain: zeroes */
		smp_store_release(&c->cc, cc);
	}
	if (!c->ring) {
		struct dp_entry *ring;

		ring = vzalloc(array_size(dp_cfg.ring_entries, sizeof(*ring)));
		if (!ring)
			return -ENOMEM;
		c->ring_entries = dp_cfg.ring_entries;
		c->mask = dp_cfg.ring_entries - 1;
		c->head = 0;
		c->tail = 0;
		/* the reader may look at this CPU now: publish last */
		smp_store_release(&c->ring, ring);
	}
	if (event == DP_KMOD_EV_CYCLES) {
		attr.type = PERF_TYPE_HARDWARE;
		attr.config = PERF_COUNT_HW_CPU_CYCLES;
		attr.sample_period = dp_cfg.period;
	} else {
		attr.type = PERF_TYPE_SOFTWARE;
		attr.config = PERF_COUNT_SW_CPU_CLOCK;
		attr.sample_period = dp_cfg.clock_ns;
	}
	ev = perf_event_create_kernel_counter(&attr, cpu, NULL, dp_overflow, c);
	if (IS_ERR(ev))
		return PTR_ERR(ev);
	c->event = ev;
	return 0;
}

static void dp_cpu_stop(unsigned int cpu)
{
	struct dp_cpu *c = per_cpu_ptr(&dp_cpus, cpu);

	if (!c->event)
		return;
	/* returns once the counter is off and no handler of it runs */
	perf_event_release_kernel(c->event);
	c->event = NULL;
	/*
	 * a walk it left to the irq_work is made (or given up) and its
	 * entry published
	 */
	irq_work_sync(&c->cc_work);
	dp_cc_settle(c);
}

static int dp_cpu_online(unsigned int cpu)
{
	int err;

	if (!dp_enabled)
		return 0;
	err = dp_cpu_start(cpu, dp_event);
	/* never fail a CPU's onlining for the profiler's sake */
	if (err)
		pr_warn("cpu %u: no counter (%d)\n", cpu, err);
	return 0;
}

static int dp_cpu_offline(unsigned int cpu)
{
	/* the ring stays: what the CPU sampled is still to be read */
	dp_cpu_stop(cpu);
	return 0;
}

static void dp_free_rings(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct dp_cpu *c = per_cpu_ptr(&dp_cpus, cpu);

		vfree(c->ring);
		c->ring = NULL;
		c->ring_entries = 0;
		vfree(c->cc);
		c->cc = NULL;
		c->cc_words = 0;
	}
}

/* Does this CPU have a PMU that counts cycles? */
static bool dp_have_cycles(void)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_HARDWARE,
		.config = PERF_COUNT_HW_CPU_CYCLES,
		.size = sizeof(attr),
		.sample_period = dp_cfg.period,
		.disabled = 1,
	};
	struct perf_event *ev;

	ev = perf_event_create_kernel_counter(&attr,
					      cpumask_first(cpu_online_mask),
					      NULL, NULL, NULL);
	if (IS_ERR(ev))
		return false;
	perf_event_release_kernel(ev);
	return true;
}

static void dp_disable(void)
{
	unsigned int cpu;

	if (!dp_enabled)
		return;
	cpus_read_lock();
	WRITE_ONCE(dp_enabled, false);
	for_each_possible_cpu(cpu)
		dp_cpu_stop(cpu);
	cpus_read_unlock();
	del_timer_sync(&dp_timer);
	/* no handler can be running any more: KVM may go */
	synchronize_rcu();
	dp_cc_put();
	dp_kvm_put();
	wake_up_interruptible(&dp_wait);
}

static int dp_enable(void)
{
	unsigned int cpu, counting = 0;
	int err = 0;

	if (dp_enabled)
		return -EBUSY;
	dp_kvm_get();
	dp_cc_get();
	cpus_read_lock();
	dp_event = dp_cfg.event;
	if (dp_event == DP_KMOD_EV_AUTO)
		dp_event = dp_have_cycles() ? DP_KMOD_EV_CYCLES :
			DP_KMOD_EV_CPU_CLOCK;
	for_each_possible_cpu(cpu) {
		struct dp_cpu *c = per_cpu_ptr(&dp_cpus, cpu);

		if (c->ring && c->ring_entries != dp_cfg.ring_entries) {
			vfree(c->ring);
			c->ring = NULL;
		}
		/* chain slots match the ring's size and the depth, or go */
		if (c->cc && (!c->ring || !dp_cfg.callgraph_depth ||
			      c->cc_words != dp_cfg.callgraph_depth + 1)) {
			vfree(c->cc);
			c->cc = NULL;
			c->cc_words = 0;
		}
		memset(&c->ccs, 0, sizeof(c->ccs));
		c->head = 0;
		c->tail = 0;
		c->samples = 0;
		c->guest = 0;
		c->lost = 0;
		c->lost_reported = 0;
		c->handler_ns = 0;
	}
	dp_gen++;
	dp_start_ns = ktime_get_ns();
	WRITE_ONCE(dp_enabled, true);
	for_each_online_cpu(cpu) {
		err = dp_cpu_start(cpu, dp_event);
		if (err)
			pr_warn("cpu %u: no counter (%d)\n", cpu, err);
		else
			counting++;
	}
	cpus_read_unlock();
	if (!counting) {
		dp_disable();
		return err ? err : -ENODEV;
	}
	mod_timer(&dp_timer, jiffies + DP_WAKE_JIFFIES);
	return 0;
}

static int dp_check_config(const struct dp_kmod_config *c)
{
	if (c->abi != DP_KMOD_ABI)
		return -EPROTO;
	if (c->event > DP_KMOD_EV_CPU_CLOCK ||
	    c->flags & ~(DP_KMOD_CF_KERNEL | DP_KMOD_CF_USER) ||
	    !(c->flags & (DP_KMOD_CF_KERNEL | DP_KMOD_CF_USER)))
		return -EINVAL;
	if (c->period < DP_KMOD_MIN_PERIOD ||
	    c->clock_ns < DP_KMOD_MIN_CLOCK_NS)
		return -EINVAL;
	if (c->ring_entries < DP_KMOD_MIN_RING ||
	    c->ring_entries > DP_KMOD_MAX_RING ||
	    !is_power_of_2(c->ring_entries))
		return -EINVAL;
	if (c->callgraph_depth > DP_KMOD_MAX_CG_DEPTH ||
	    (u64)c->ring_entries * (c->callgraph_depth + 1) * sizeof(u64) >
	    DP_CC_MAX_BYTES)
		return -EINVAL;
	return 0;
}

static int dp_cc_stats(void __user *uarg)
{
	struct dp_kmod_cc_stats st;
	struct dp_cc_counts *n;

	if (copy_from_user(&st, uarg, sizeof(st)))
		return -EFAULT;
	if (st.cpu >= nr_cpu_ids || !cpu_possible(st.cpu))
		return -ENOENT;
	n = &per_cpu_ptr(&dp_cpus, st.cpu)->ccs;
	st.pad = 0;
	st.chains = READ_ONCE(n->chains);
	st.frames = READ_ONCE(n->frames);
	st.truncated = READ_ONCE(n->truncated);
	st.depth_limited = READ_ONCE(n->depth_limited);
	st.empty = READ_ONCE(n->empty);
	st.no_walk = READ_ONCE(n->no_walk);
	st.nmi = READ_ONCE(n->nmi);
	if (copy_to_user(uarg, &st, sizeof(st)))
		return -EFAULT;
	return 0;
}

static long dp_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;
	struct dp_kmod_config cfg;
	struct dp_kmod_cpu_stats st;
	struct dp_cpu *c;
	long err = 0;

	mutex_lock(&dp_lock);
	switch (cmd) {
	case DP_KMOD_IOC_SET_CONFIG:
		if (copy_from_user(&cfg, uarg, sizeof(cfg))) {
			err = -EFAULT;
			break;
		}
		err = dp_check_config(&cfg);
		if (!err && dp_enabled)
			err = -EBUSY;
		if (!err) {
			cfg.active_event = DP_KMOD_EV_AUTO;
			dp_cfg = cfg;
		}
		break;
	case DP_KMOD_IOC_GET_CONFIG:
		cfg = dp_cfg;
		cfg.active_event = dp_enabled ? dp_event : DP_KMOD_EV_AUTO;
		if (copy_to_user(uarg, &cfg, sizeof(cfg)))
			err = -EFAULT;
		break;
	case DP_KMOD_IOC_ENABLE:
		err = dp_enable();
		break;
	case DP_KMOD_IOC_DISABLE:
		dp_disable();
		break;
	case DP_KMOD_IOC_CPU_STATS:
		if (copy_from_user(&st, uarg, sizeof(st))) {
			err = -EFAULT;
			break;
		}
		if (st.cpu >= nr_cpu_ids || !cpu_possible(st.cpu)) {
			err = -ENOENT;
			break;
		}
		c = per_cpu_ptr(&dp_cpus, st.cpu);
		st.flags = DP_KMOD_CS_POSSIBLE;
		if (READ_ONCE(c->event))
			st.flags |= DP_KMOD_CS_COUNTING;
		st.samples = READ_ONCE(c->samples);
		st.lost = READ_ONCE(c->lost);
		st.guest = READ_ONCE(c->guest);
		if (copy_to_user(uarg, &st, sizeof(st)))
			err = -EFAULT;
		break;
	case DP_KMOD_IOC_CC_STATS:
		err = dp_cc_stats(uarg);
		break;
	default:
		err = -ENOTTY;
	}
	mutex_unlock(&dp_lock);
	return err;
}

/*
 * Move what the rings hold into @ubuf, whole records only.  Called with
 * dp_lock held.  Returns the bytes copied or -EFAULT.
 */
static ssize_t dp_drain(struct dp_file *df, char __user *ubuf, size_t count)
{
	u8 *rec = df->rec;
	struct dp_stream saved;
	size_t done = 0, n;
	unsigned int i, cpu;
	bool progress = true;

	while (progress) {
		progress = false;
		for (i = 0; i < nr_cpu_ids; i++) {
			struct dp_cpu *c;
			struct dp_entry *ring;
			const u64 *cc, *slot;
			unsigned long head, tail;
			unsigned int batch = 0;
			u64 lost;

			cpu = (df->next_cpu + i) % nr_cpu_ids;
			if (!cpu_possible(cpu))
				continue;
			c = per_cpu_ptr(&dp_cpus, cpu);
			/* pairs with the release in dp_cpu_start() */
			ring = smp_load_acquire(&c->ring);
			if (!ring)
				continue;
			lost = READ_ONCE(c->lost);
			if (lost != c->lost_reported) {
				n = dp_stream_lost(rec, lost - c->lost_reported);
				if (done + n > count)
					return done;
				if (copy_to_user(ubuf + done, rec, n))
					return -EFAULT;
				done += n;
				c->lost_reported = lost;
				progress = true;
			}
			/* the slots below head are written: see dp_overflow() */
			head = smp_load_acquire(&c->head);
			tail = c->tail;
			/* pairs with the release in dp_cpu_start() */
			cc = smp_load_acquire(&c->cc);
			while (tail != head && batch++ < DP_BATCH) {
				slot = cc ? cc + (tail & c->mask) * c->cc_words :
					NULL;
				saved = df->s;
				n = dp_stream_entry(&df->s, rec, cpu,
						    &ring[tail & c->mask], slot);
				if (done + n > count) {
					/* not sent: the context is not either */
					df->s = saved;
					df->next_cpu = cpu;
					return done ? done : -EINVAL;
				}
				if (copy_to_user(ubuf + done, rec, n))
					return -EFAULT;
				done += n;
				tail++;
				/* hand the slot back to the producer */
				smp_store_release(&c->tail, tail);
				progress = true;
			}
		}
		df->next_cpu = (df->next_cpu + 1) % nr_cpu_ids;
	}
	return done;
}

static ssize_t dp_read(struct file *f, char __user *ubuf, size_t count,
		       loff_t *ppos)
{
	struct dp_file *df = f->private_data;
	u8 hdr[sizeof(struct dp_raw_header) + sizeof(struct dp_raw_event)];
	ssize_t ret;
	size_t n;

	if (count < sizeof(hdr))
		return -EINVAL;
	for (;;) {
		if (mutex_lock_interruptible(&dp_lock))
			return -ERESTARTSYS;
		if (!dp_gen) {
			/* never enabled: no stream */
			mutex_unlock(&dp_lock);
			return 0;
		}
		if (df->gen != dp_gen) {
			/* a new stream starts with its header */
			n = dp_stream_header(hdr, sizeof(hdr), dp_event,
					     dp_event == DP_KMOD_EV_CYCLES ?
					     dp_cfg.period : dp_cfg.clock_ns,
					     dp_cfg.flags, dp_start_ns);
			ret = -EFAULT;
			if (n && !copy_to_user(ubuf, hdr, n)) {
				memset(&df->s, 0, sizeof(df->s));
				df->gen = dp_gen;
				ret = n;
			}
			mutex_unlock(&dp_lock);
			return ret;
		}
		ret = dp_drain(df, ubuf, count);
		if (ret || !dp_enabled) {
			/* 0 after disable: the stream ended, all drained */
			mutex_unlock(&dp_lock);
			return ret;
		}
		mutex_unlock(&dp_lock);
		if (f->f_flags & O_NONBLOCK)
			return -EAGAIN;
		if (wait_event_interruptible(dp_wait, dp_any_pending() ||
					     !READ_ONCE(dp_enabled)))
			return -ERESTARTSYS;
	}
}

static __poll_t dp_poll(struct file *f, poll_table *pt)
{
	struct dp_file *df = f->private_data;
	__poll_t mask = 0;

	poll_wait(f, &dp_wait, pt);
	if (dp_any_pending() || (READ_ONCE(dp_gen) && df->gen != dp_gen))
		mask |= EPOLLIN | EPOLLRDNORM;
	else if (!READ_ONCE(dp_enabled))
		mask |= EPOLLHUP;
	return mask;
}

static int dp_open(struct inode *inode, struct file *f)
{
	struct dp_file *df;

	/* one reader: two would split the stream between them */
	if (test_and_set_bit_lock(0, &dp_open_bit))
		return -EBUSY;
	df = kzalloc(sizeof(*df), GFP_KERNEL);
	if (!df) {
		clear_bit_unlock(0, &dp_open_bit);
		return -ENOMEM;
	}
	f->private_data = df;
	return stream_open(inode, f);
}

/*
 * The last descriptor of the one reader closed (the reader exited, or was
 * killed): stop sampling as DP_KMOD_IOC_DISABLE does.  Left on, the
 * counters and the NMI would run for rings nobody reads, and the next
 * reader's DP_KMOD_IOC_SET_CONFIG would get EBUSY until the module was
 * unloaded.
 */
static int dp_release(struct inode *inode, struct file *f)
{
	mutex_lock(&dp_lock);
	dp_disable();
	mutex_unlock(&dp_lock);
	kfree(f->private_data);
	clear_bit_unlock(0, &dp_open_bit);
	return 0;
}

static const struct file_operations dp_fops = {
	.owner = THIS_MODULE,
	.open = dp_open,
	.release = dp_release,
	.read = dp_read,
	.poll = dp_poll,
	.unlocked_ioctl = dp_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = no_llseek,
};

static ssize_t stats_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	unsigned int cpu;
	int len = 0;

	for_each_possible_cpu(cpu) {
		struct dp_cpu *c = per_cpu_ptr(&dp_cpus, cpu);

		len += sysfs_emit_at(buf, len,
				     "cpu %u samples %llu lost %llu guest %llu counting %d cr3_direct %llu cr3_refused %llu handler_ns %llu\n",
				     cpu, READ_ONCE(c->samples),
				     READ_ONCE(c->lost), READ_ONCE(c->guest),
				     READ_ONCE(c->event) ? 1 : 0,
				     READ_ONCE(c->cr3_direct), READ_ONCE(c->cr3_refused),
				     READ_ONCE(c->handler_ns));
	}
	return len;
}
static DEVICE_ATTR_RO(stats);

static ssize_t callchain_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	unsigned int cpu;
	int len = 0;

	for_each_possible_cpu(cpu) {
		struct dp_cc_counts *n = &per_cpu_ptr(&dp_cpus, cpu)->ccs;

		len += sysfs_emit_at(buf, len,
				     "cpu %u chains %llu frames %llu truncated %llu depth_limited %llu empty %llu no_walk %llu nmi %llu walks %llu walk_ns %llu deferred %llu deferred_changed %llu deferred_superseded %llu deferred_busy %llu\n",
				     cpu, READ_ONCE(n->chains),
				     READ_ONCE(n->frames),
				     READ_ONCE(n->truncated),
				     READ_ONCE(n->depth_limited),
				     READ_ONCE(n->empty), READ_ONCE(n->no_walk),
				     READ_ONCE(n->nmi), READ_ONCE(n->walks),
				     READ_ONCE(n->walk_ns), READ_ONCE(n->deferred),
				     READ_ONCE(n->deferred_changed),
				     READ_ONCE(n->deferred_superseded),
				     READ_ONCE(n->deferred_busy));
	}
	return len;
}
static DEVICE_ATTR_RO(callchain);

static struct attribute *dp_attrs[] = {
	&dev_attr_stats.attr,
	&dev_attr_callchain.attr,
	NULL,
};
ATTRIBUTE_GROUPS(dp);

static struct miscdevice dp_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = DP_KMOD_NAME,
	.fops = &dp_fops,
	.groups = dp_groups,
	.mode = 0600,
};

static int __init dp_init(void)
{
	const char *cr3 = dp_cr3_init();
	unsigned int cpu;
	int err;

	pr_info("domprof: guest address spaces under nested paging: %s\n",
		cr3 ? cr3 : "not known on this CPU (samples say unknown)");
	for_each_possible_cpu(cpu)
		dp_cc_init_cpu(per_cpu_ptr(&dp_cpus, cpu));
	timer_setup(&dp_timer, dp_timer_fn, 0);
	err = cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN, "domprof:online",
					dp_cpu_online, dp_cpu_offline);
	if (err < 0)
		return err;
	dp_hp_state = err;
	err = misc_register(&dp_misc);
	if (err) {
		cpuhp_remove_state_nocalls(dp_hp_state);
		return err;
	}
	return 0;
}

static void __exit dp_exit(void)
{
	misc_deregister(&dp_misc);
	mutex_lock(&dp_lock);
	dp_disable();
	mutex_unlock(&dp_lock);
	cpuhp_remove_state_nocalls(dp_hp_state);
	dp_free_rings();
}

module_init(dp_init);
module_exit(dp_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("The domprof authors");
MODULE_DESCRIPTION("domprof: per-CPU sampling that knows KVM guests, vCPUs and guest address spaces");
