/* The configuration every Octet shim (PMPI, NCCL ...) reads from the environment, once.
 * Plain C so that any shim can include it; the parsing lives in shim_config.cc, and every rule it
 * applies (sizes, type names, block sizes) is the library's, reached through octet_c.h.
 * The variables and their defaults are documented in plugins/pmpi/README.md. */
#ifndef OCTET_PLUGINS_COMMON_SHIM_CONFIG_H_
#define OCTET_PLUGINS_COMMON_SHIM_CONFIG_H_

#include <stddef.h>
#include <stdint.h>

#include "octet/octet_c.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The operations a shim can compress (bits of octet_shim_config.ops). */
typedef enum {
  OCTET_SHIM_OP_ALLREDUCE = 0,
  OCTET_SHIM_OP_IALLREDUCE = 1,
  OCTET_SHIM_OP_REDUCE_SCATTER_BLOCK = 2,
  OCTET_SHIM_OP_ALLGATHER = 3,
  OCTET_SHIM_OP_BCAST = 4,
  OCTET_SHIM_OP_COUNT = 5
} octet_shim_op;

/* Default OCTET_OPS: the gradient reductions. Broadcasts and allgathers usually carry
 * parameters, which are better left exact unless the user asks. */
#define OCTET_SHIM_DEFAULT_OPS "allreduce,iallreduce,reduce_scatter_block"
#define OCTET_SHIM_DEFAULT_MIN_BYTES 65536u

/* OCTET_PROGRESS: how a compressed nonblocking call makes progress. */
typedef enum {
  OCTET_SHIM_PROGRESS_THREAD = 0, /* a progress thread runs it while the application computes */
  OCTET_SHIM_PROGRESS_EAGER = 1   /* it runs to completion inside the call that starts it */
} octet_shim_progress;

typedef struct {
  int valid;            /* 0: some variable had a bad value (see error); pass everything through */
  char error[512];      /* the first problem found, for the user */
  int enable;           /* OCTET_ENABLE, default 1 */
  unsigned ops;         /* OCTET_OPS as a bit set of (1u << octet_shim_op) */
  octet_data_type type; /* OCTET_TYPE, default dynamic */
  uint32_t block;       /* OCTET_BLOCK resolved by the codec's rule (unset: the type's default) */
  uint64_t min_bytes;   /* OCTET_MIN_BYTES, fp32 message bytes below which calls pass through */
  int stochastic;       /* OCTET_STOCHASTIC */
  int error_feedback;   /* OCTET_ERROR_FEEDBACK */
  int shadow;           /* OCTET_SHADOW */
  int progress;         /* OCTET_PROGRESS, an octet_shim_progress (default: thread) */
  octet_policy policy;  /* OCTET_POLICY: auto (default), always or never (octet/policy.h) */
  char report[4096];    /* OCTET_REPORT, empty = no report */
  /* OCTET_CALIBRATION: a policy-curve file (octet predict curves) that seeds the auto policy's
   * cost curves on each communicator instead of measuring them; empty = measure. */
  char calibration[4096];
} octet_shim_config;

/* Fills *config from getenv(). Never fails: problems set valid = 0 and error. */
void octet_shim_config_from_env(octet_shim_config* config);

/* Same, with a lookup function instead of getenv (for tests); lookup returns NULL for unset. */
void octet_shim_config_parse(octet_shim_config* config, const char* (*lookup)(const char* name));

/* Everything that changes what the shim does, valid flag included, as integers: ranks whose
 * fields differ would take different decisions, so the shims compare them across ranks (exactly,
 * with a MIN and a MAX reduction). */
#define OCTET_SHIM_CONFIG_FIELDS 13
void octet_shim_config_fields(const octet_shim_config* config,
                              int64_t fields[OCTET_SHIM_CONFIG_FIELDS]);

/* Whether the shim compresses op at all (enabled, valid and listed in OCTET_OPS). */
int octet_shim_config_wants(const octet_shim_config* config, octet_shim_op op);

/* "allreduce", "iallreduce" ... */
const char* octet_shim_op_name(octet_shim_op op);
/* Writes the ops set as a comma list ("allreduce,bcast"); returns out. */
char* octet_shim_ops_string(unsigned ops, char* out, size_t capacity);

#ifdef __cplusplus
}
#endif

#endif /* OCTET_PLUGINS_COMMON_SHIM_CONFIG_H_ */
