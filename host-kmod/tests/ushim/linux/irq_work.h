/* User-space stand-in for <linux/irq_work.h>: the type only (struct
 * dp_cpu in domprof.h). */
struct irq_work { int pending; };
