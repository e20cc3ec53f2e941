/*
 * The frames a domain's guest state has for its agent (HOST_JOIN,
 * HOST_HELLO, CONFIG, PING, IMAGE_REQUEST), queued until the channel takes them.  A
 * frame that does not fit is dropped and counted: the agent protocol
 * repeats what matters (PINGs recur, requests are asked again on a new
 * connection).
 */
#ifndef OPD_GUEST_OUT_H
#define OPD_GUEST_OUT_H

#include <stddef.h>
#include <stdint.h>

#include "agent/agent.h"

#define OPD_GOUT_SIZE 8192

struct opd_gout {
	uint8_t buf[OPD_GOUT_SIZE];
	size_t len;
	uint64_t *dropped;	/* agent_output_dropped, borrowed */
};

/* Empty, counting drops in @dropped. */
void opd_gout_init(struct opd_gout *o, uint64_t *dropped);
void opd_gout_clear(struct opd_gout *o);

void opd_gout_host_hello(struct opd_gout *o, const struct dp_ag_host_hello *hh);
void opd_gout_config(struct opd_gout *o, const struct dp_ag_config *cfg);
void opd_gout_ping(struct opd_gout *o, uint64_t token);
void opd_gout_image_request(struct opd_gout *o, uint32_t cookie);
void opd_gout_host_join(struct opd_gout *o, uint64_t token);
void opd_gout_host_ack(struct opd_gout *o, uint64_t bytes);

/* Move up to @size bytes of whole frames into @buf; returns the bytes. */
size_t opd_gout_take(struct opd_gout *o, void *buf, size_t size);

#endif
