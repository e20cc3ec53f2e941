# lab-kind: xen
# xen-overhead's interleaved rounds (its header says how) for the parts
# of the 1 kHz figure: 1 kHz as by default, 1 kHz without dom0's own work
# sampled (--no-dom0: the perf collector's timer and samples in dom0), and
# 1 kHz under a read budget of 2%.  A figure, not a test; about 7 minutes.
XO_ROUNDS=${XO_ROUNDS:-3}
XO_KINDS=${XO_KINDS:-hz1000 hz1000nd hz1000b2}
. "$LAB/scenarios/xen-overhead.sh"
