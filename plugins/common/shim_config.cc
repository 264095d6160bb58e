// Parsing of the OCTET_* environment shared by the shims. Every bad value is reported by name
// and value and turns the whole configuration invalid: a shim that half-applies a configuration
// the user got wrong would compress calls the user did not mean to compress.
#include "shim_config.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "octet/detail/quoted.h"
#include "octet/octet_c.h"

namespace {

const char* const kOpNames[OCTET_SHIM_OP_COUNT] = {"allreduce", "iallreduce",
                                                   "reduce_scatter_block", "allgather", "bcast"};

std::string lower_trimmed(const char* text) {
  std::string s(text);
  size_t begin = s.find_first_not_of(" \t");
  size_t end = s.find_last_not_of(" \t");
  s = begin == std::string::npos ? std::string() : s.substr(begin, end - begin + 1);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void fail(octet_shim_config* c, const char* name, const char* value, const char* expected) {
  if (!c->valid) return;  // keep the first problem: it is the one to fix first
  c->valid = 0;
  std::snprintf(c->error, sizeof c->error, "%s=%s is not valid (expected %s)", name,
                octet::detail::quoted(value, '"').c_str(), expected);
}

bool parse_bool(const char* text, int* out) {
  const std::string s = lower_trimmed(text);
  if (s == "1" || s == "true" || s == "yes" || s == "on")
    *out = 1;
  else if (s == "0" || s == "false" || s == "no" || s == "off")
    *out = 0;
  else
    return false;
  return true;
}

// The library's size grammar (include/octet/units.h): 65536, 64K, 64 KiB, 1M.
bool parse_bytes(const char* text, uint64_t* out) {
  const std::string s = lower_trimmed(text);
  return octet_parse_size(s.c_str(), out) == OCTET_OK;
}

bool parse_ops(const char* text, unsigned* out) {
  const std::string s = lower_trimmed(text);
  if (s == "all") {
    *out = (1u << OCTET_SHIM_OP_COUNT) - 1;
    return true;
  }
  unsigned ops = 0;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    const std::string item = lower_trimmed(s.substr(pos, comma - pos).c_str());
    int found = -1;
    for (int op = 0; op < OCTET_SHIM_OP_COUNT; ++op)
      if (item == kOpNames[op]) found = op;
    if (found < 0) return false;  // also rejects empty items: "allreduce,,bcast"
    ops |= 1u << found;
    pos = comma + 1;
  }
  *out = ops;
  return true;
}

bool parse_type(const char* text, octet_data_type* out) {
  return octet_data_type_from_name(lower_trimmed(text).c_str(), out) == OCTET_OK;
}

// A size that the codec accepts as a block size for this type (0: the type's default); stores the
// resolved block size.
bool parse_block(const char* text, octet_data_type type, uint32_t* out) {
  uint64_t value = 0;
  if (!parse_bytes(text, &value) || value > UINT32_MAX) return false;
  octet_options o;
  octet_options_init(&o);
  o.type = type;
  o.block_size = static_cast<uint32_t>(value);
  return octet_options_validate(&o, out) == OCTET_OK;
}

bool parse_progress(const char* text, int* out) {
  const std::string s = lower_trimmed(text);
  if (s == "thread") *out = OCTET_SHIM_PROGRESS_THREAD;
  if (s == "eager") *out = OCTET_SHIM_PROGRESS_EAGER;
  return s == "thread" || s == "eager";
}

bool parse_policy(const char* text, octet_policy* out) {
  const std::string s = lower_trimmed(text);
  if (s == "auto") *out = OCTET_POLICY_AUTO;
  if (s == "always") *out = OCTET_POLICY_ALWAYS;
  if (s == "never") *out = OCTET_POLICY_NEVER;
  return s == "auto" || s == "always" || s == "never";
}

void set_defaults(octet_shim_config* c) {
  std::memset(c, 0, sizeof *c);
  c->valid = 1;
  c->enable = 1;
  parse_ops(OCTET_SHIM_DEFAULT_OPS, &c->ops);
  c->type = OCTET_TYPE_DYNAMIC;
  c->min_bytes = OCTET_SHIM_DEFAULT_MIN_BYTES;
}

void parse_bool_var(octet_shim_config* c, const char* (*lookup)(const char*), const char* name,
                    int* out) {
  const char* v = lookup(name);
  if (v && !parse_bool(v, out)) fail(c, name, v, "0 or 1");
}

// A path variable into out[4096].
void parse_path(octet_shim_config* c, const char* (*lookup)(const char*), const char* name,
                char (&out)[4096]) {
  const char* v = lookup(name);
  if (!v) return;
  if (std::strlen(v) >= sizeof out)
    fail(c, name, "...", "a path shorter than 4096 bytes");
  else
    std::snprintf(out, sizeof out, "%s", v);
}

// OCTET_SIMD_TARGET is the codec's own variable (octet::simd_target()); the shims check it here
// too, so that a name the codec would refuse at every call passes every call through instead,
// reported once like any other bad value.
void check_simd_target(octet_shim_config* c, const char* (*lookup)(const char*)) {
  const char* v = lookup("OCTET_SIMD_TARGET");
  if (v == nullptr || *v == '\0') return;
  char names[256];
  octet_simd_targets(names, sizeof names);
  for (const char* name = names; *name != '\0';) {
    const size_t length = std::strcspn(name, " ");
    if (std::strlen(v) == length && std::strncmp(name, v, length) == 0) return;
    name += length + (name[length] == ' ' ? 1 : 0);
  }
  fail(c, "OCTET_SIMD_TARGET", v, (std::string("one of this CPU and build's: ") + names).c_str());
}

const char* env_lookup(const char* name) {
  return std::getenv(name);
}

}  // namespace

extern "C" {

void octet_shim_config_parse(octet_shim_config* c, const char* (*lookup)(const char* name)) {
  set_defaults(c);
  const char* v = nullptr;
  parse_bool_var(c, lookup, "OCTET_ENABLE", &c->enable);
  if ((v = lookup("OCTET_OPS")) && !parse_ops(v, &c->ops))
    fail(
        c, "OCTET_OPS", v,
        "\"all\" or a comma list of allreduce, iallreduce, reduce_scatter_block, allgather, bcast");
  if ((v = lookup("OCTET_TYPE")) && !parse_type(v, &c->type))
    fail(c, "OCTET_TYPE", v,
         "dynamic, linear, mantissa, static_tree, dynamic_unsigned or dynamic4");
  v = lookup("OCTET_BLOCK");
  if (!parse_block(v ? v : "0", c->type, &c->block))
    fail(c, "OCTET_BLOCK", v ? v : "", "0 or a power of two from 64 to 65536, e.g. 4096 or 4K");
  if ((v = lookup("OCTET_MIN_BYTES")) && !parse_bytes(v, &c->min_bytes))
    fail(c, "OCTET_MIN_BYTES", v, "a size such as 65536, 64K or 1M");
  parse_bool_var(c, lookup, "OCTET_STOCHASTIC", &c->stochastic);
  parse_bool_var(c, lookup, "OCTET_ERROR_FEEDBACK", &c->error_feedback);
  parse_bool_var(c, lookup, "OCTET_SHADOW", &c->shadow);
  if ((v = lookup("OCTET_PROGRESS")) && !parse_progress(v, &c->progress))
    fail(c, "OCTET_PROGRESS", v, "thread or eager");
  if ((v = lookup("OCTET_POLICY")) && !parse_policy(v, &c->policy))
    fail(c, "OCTET_POLICY", v, "auto, always or never");
  parse_path(c, lookup, "OCTET_REPORT", c->report);
  parse_path(c, lookup, "OCTET_CALIBRATION", c->calibration);
  check_simd_target(c, lookup);
}

void octet_shim_config_from_env(octet_shim_config* config) {
  octet_shim_config_parse(config, env_lookup);
}

void octet_shim_config_fields(const octet_shim_config* c,
                              int64_t fields[OCTET_SHIM_CONFIG_FIELDS]) {
  // The report path itself may differ (only rank 0 writes it) but whether there is one decides
  // whether every rank joins the gathering at finalize, so that much must agree. So with the
  // calibration: loading it is collective (rank 0's file is the one every rank takes).
  const int64_t f[OCTET_SHIM_CONFIG_FIELDS] = {c->valid,
                                               c->enable,
                                               c->ops,
                                               c->type,
                                               c->block,
                                               static_cast<int64_t>(c->min_bytes),
                                               c->stochastic,
                                               c->error_feedback,
                                               c->shadow,
                                               c->report[0] != '\0',
                                               c->progress,
                                               c->policy,
                                               c->calibration[0] != '\0'};
  std::memcpy(fields, f, sizeof f);
}

int octet_shim_config_wants(const octet_shim_config* c, octet_shim_op op) {
  return c->valid && c->enable && op >= 0 && op < OCTET_SHIM_OP_COUNT && (c->ops >> op) & 1u;
}

const char* octet_shim_op_name(octet_shim_op op) {
  return op >= 0 && op < OCTET_SHIM_OP_COUNT ? kOpNames[op] : "unknown";
}

char* octet_shim_ops_string(unsigned ops, char* out, size_t capacity) {
  std::string s;
  for (int op = 0; op < OCTET_SHIM_OP_COUNT; ++op)
    if ((ops >> op) & 1u) s += (s.empty() ? "" : ",") + std::string(kOpNames[op]);
  if (capacity > 0) std::snprintf(out, capacity, "%s", s.c_str());
  return out;
}

}  // extern "C"
