/*
 * Daemon counters and the SESSION/stats file (see the session contract).
 */
#ifndef OPD_STATS_H
#define OPD_STATS_H

#include <stdbool.h>
#include <stdint.h>

/* X-macro: the contract's keys first (never rename), then our additions. */
#define OPD_STATS_KEYS(X)			\
	X(dumps)				\
	X(samples_received)			\
	X(samples_lost)				\
	X(samples_filed)			\
	X(samples_host_kernel)			\
	X(samples_host_user)			\
	X(samples_guest_kernel)			\
	X(samples_guest_user)			\
	X(unresolved_no_mapping)		\
	X(unresolved_kernel)			\
	X(unresolved_no_task)			\
	X(unresolved_bad_event)			\
	X(stream_unknown_records)		\
	X(stream_bad_records)			\
	X(processes_seen)			\
	X(sample_files)				\
	X(stream_records)			\
	X(stream_bytes)				\
	X(samples_bad_mode)			\
	X(sample_file_errors)			\
	X(sample_files_evicted)			\
	X(sample_files_sys_capped)		\
	X(sample_files_released)		\
	X(contexts)				\
	X(context_resets)			\
	X(saves)				\
	X(processes_exited)			\
	X(processes_freed)			\
	X(processes_proc_lookups)		\
	X(mmaps)				\
	X(kernel_images)			\
	X(domains_seen)				\
	X(domains_running)			\
	X(domain_refused)			\
	X(privsep_agent_refused)		\
	X(privsep_maps_refused)			\
	X(privsep_worker_uid)			\
	X(samples_vmm)				\
	X(unresolved_no_domain)			\
	X(samples_domain_unselected)		\
	X(guest_user_resolved)			\
	X(guest_user_resolved_vdso)			\
	X(guest_user_before_timeline)			\
	X(guest_user_ambiguous)			\
	X(guest_user_past_timeline)		\
	X(guest_owner_scans_capped)			\
	X(guest_user_unresolved_no_agent)			\
	X(guest_user_unresolved_no_clock)			\
	X(guest_user_unresolved_no_switch)			\
	X(guest_user_unresolved_no_task)			\
	X(guest_user_unresolved_no_mapping)			\
	X(guest_user_unresolved_anon)			\
	X(guest_user_unresolved_capped)			\
	X(guest_kernel_resolved)			\
	X(guest_kernel_unresolved)			\
	X(guest_mode_by_address)			\
	X(guest_samples_held)			\
	X(guest_queue_overflow)			\
	X(agent_channels)			\
	X(agent_connects)			\
	X(agent_disconnects)			\
	X(agent_frames)			\
	X(agent_bytes)			\
	X(agent_bad_frames)			\
	X(agent_unknown_frames)			\
	X(agent_closed_bad)			\
	X(agent_skipped_bytes)			\
	X(agent_output_dropped)			\
	X(guest_tasks_capped)			\
	X(guest_maps_capped)			\
	X(guest_bytes_capped)			\
	X(guest_images_capped)			\
	X(guest_paths_rejected)			\
	X(guest_bad_values)			\
	X(guest_switches)			\
	X(guest_switches_overwritten)			\
	X(guest_mmaps)			\
	X(guest_lost_records)			\
	X(guest_clock_rtt_ns)			\
	X(guest_clock_exact)			\
	X(guest_clock_unc_ns)			\
	X(guest_images_requested)			\
	X(guest_images_cached)			\
	X(guest_images_dedup)			\
	X(guest_images_failed)			\
	X(guest_image_bytes)			\
	X(cc_chains)				\
	X(cc_chains_truncated)			\
	X(cc_chains_guest)			\
	X(cc_chains_orphan)			\
	X(cc_chains_dropped)			\
	X(cc_frames)				\
	X(cc_frames_unresolved)			\
	X(cc_arcs)				\
	X(cc_arcs_dropped)			\
	X(cc_stacks)				\
	X(cc_stacks_dropped)			\
	X(guest_hostile_image_mismatch)			\
	X(guest_budget_deferred)			\
	X(guest_budget_spent_ns)			\
	X(guest_budget_peak_ns)			\
	X(guest_budget_chunk_peak_ns)		\
	X(guest_budget_share_deferred)		\
	X(guest_budget_total_peak_ns)		\
	X(dump_time_ns)

struct opd_stats {
#define OPD_STATS_FIELD(k) uint64_t k;
	OPD_STATS_KEYS(OPD_STATS_FIELD)
#undef OPD_STATS_FIELD
	bool running;
	const char *collector;	/* borrowed */
	int64_t start_time;	/* unix seconds */
	char events[512];	/* "SPEC,SPEC" */
};

/*
 * Write @st to @session_dir/stats atomically (temporary file + rename),
 * through the monitor when @pub_fd is its channel (opd_pub.h), else
 * here (-1).  0 or -errno.
 */
int opd_stats_write(const struct opd_stats *st, const char *session_dir, int pub_fd);

/*
 * Read one integer key back from a stats file (tests, opcontrol-style
 * checks).  0 and *@val, -ENOENT if the key is absent, -EINVAL if its
 * value is not a number, or -errno.  The last line of @key wins (du_kv.h).
 */
int opd_stats_read_key(const char *session_dir, const char *key, uint64_t *val);

#endif
