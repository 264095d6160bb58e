// The shim's process-wide state: the configuration (read once at MPI_Init and agreed across
// MPI_COMM_WORLD), the Octet communicator cached on each user communicator, and error reporting.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "octet/octet_mpi.h"
#include "shim.h"

namespace octet_pmpi {

struct CommEntry {
  uint64_t id = 0;  // creation order on this rank, for error-feedback keys
  // The shim's own duplicate of the user's communicator: every agreement round and all of Octet's
  // traffic go there, so that none of it can ever be matched with the application's messages
  // or collectives on the user's communicator (even in an erroneous program whose ranks decide
  // differently). MPI_COMM_NULL until the first eligible call.
  MPI_Comm own = MPI_COMM_NULL;
  octet_comm comm = nullptr;     // null until the first eligible call that may compress
  bool decided = false;          // allowed below reflects the current info of the communicator
  bool allowed = false;          // every rank allows compression on this communicator
  uint64_t calls = 0;            // compressed calls so far
  bool opted_out = false;        // this rank's MPI_Comm_set_info said octet_compress=false
  bool p2p_wanted = false;       // this rank's MPI_Comm_set_info said octet_p2p=true
  std::atomic<bool> p2p{false};  // every rank opted in to compressed point-to-point (p2p.cc)
};

namespace {

State g_state;
std::mutex g_mutex;                 // guards the entries and the keyval below
std::vector<CommEntry*> g_entries;  // live entries, in creation order
int g_keyval = MPI_KEYVAL_INVALID;
uint64_t g_next_id = 0;
int g_error_codes[OCTET_ERR_INTERNAL + 1];
int g_errors_printed = 0;

void free_entry_comm(CommEntry* entry) {
  if (entry->comm) octet_comm_free(entry->comm);
  entry->comm = nullptr;
  if (entry->own != MPI_COMM_NULL) PMPI_Comm_free(&entry->own);
}

// Attribute delete callback: the user freed the communicator (collective), so free ours too.
int delete_entry(MPI_Comm, int, void* value, void*) {
  auto* entry = static_cast<CommEntry*>(value);
  drain_compressed(entry);  // MPI lets a communicator be freed with operations pending
  p2p_forget(entry);
  std::lock_guard<std::mutex> lock(g_mutex);
  free_entry_comm(entry);
  for (size_t i = 0; i < g_entries.size(); ++i)
    if (g_entries[i] == entry) g_entries.erase(g_entries.begin() + static_cast<long>(i));
  delete entry;
  return MPI_SUCCESS;
}

// MPI error codes whose MPI_Error_string names the Octet failure; the closest MPI class.
int error_class(int status) {
  switch (status) {
    case OCTET_ERR_INVALID_ARGUMENT:
    case OCTET_ERR_MISMATCH:
      return MPI_ERR_ARG;
    case OCTET_ERR_UNSUPPORTED:
    case OCTET_ERR_UNAVAILABLE:
      return MPI_ERR_UNSUPPORTED_OPERATION;
    case OCTET_ERR_INTERNAL:
      return MPI_ERR_INTERN;
    default:
      return MPI_ERR_OTHER;
  }
}

const char* const kStatusNames[] = {
    "ok",          "invalid argument", "corrupt payload",   "truncated payload", "unsupported",
    "unavailable", "ranks disagree",   "transport failure", "internal error"};

void create_error_codes() {
  for (int s = 1; s <= OCTET_ERR_INTERNAL; ++s) {
    g_error_codes[s] = error_class(s);
    int code = 0;
    if (PMPI_Add_error_code(error_class(s), &code) != MPI_SUCCESS) continue;
    char text[128];
    std::snprintf(text, sizeof text, "Octet PMPI shim: %s (see stderr for details)",
                  kStatusNames[s]);
    if (PMPI_Add_error_string(code, text) == MPI_SUCCESS) g_error_codes[s] = code;
  }
}

// Rank 0 tells the user once why the shim passes everything through.
void explain_configuration() {
  const octet_shim_config& c = g_state.config;
  if (g_state.world_rank != 0) return;
  if (!g_state.agreed)
    std::fprintf(stderr,
                 "octet-pmpi: ranks have different OCTET_* settings (or some have a bad value); "
                 "passing every call through uncompressed\n");
  else if (!c.valid)
    std::fprintf(stderr, "octet-pmpi: %s; passing every call through uncompressed\n", c.error);
}

// Whether info says octet_compress=false (or 0, no, off).
// The boolean value of an info key: 1 (true, 1, yes, on), 0 (false, 0, no, off), -1 (absent or
// anything else).
int info_flag(MPI_Info info, const char* key) {
  if (info == MPI_INFO_NULL) return -1;
  char value[64] = {0};
  int found = 0;
  if (PMPI_Info_get(info, key, sizeof value - 1, value, &found) != MPI_SUCCESS || !found) return -1;
  for (const char* yes : {"true", "1", "yes", "on"})
    if (!std::strcmp(value, yes)) return 1;
  for (const char* no : {"false", "0", "no", "off"})
    if (!std::strcmp(value, no)) return 0;
  return -1;
}

// Whether info says octet_compress=false (or 0, no, off).
bool info_opts_out(MPI_Info info) {
  return info_flag(info, "octet_compress") == 0;
}

// Whether every rank allows compression on comm, agreed by MIN. OpenMPI's MPI_Comm_get_info only
// returns the keys it knows, so the key seen by our MPI_Comm_set_info counts as well.
// Whether a communicator can ever compress: equal on every rank, so no agreement is needed.
bool can_compress(MPI_Comm comm) {
  int inter = 0, size = 1;
  PMPI_Comm_test_inter(comm, &inter);
  PMPI_Comm_size(comm, &size);
  return !inter && size >= 2;
}

// Whether this rank allows compression on comm (its info key, as our interceptor or
// MPI_Comm_get_info saw it). OpenMPI's MPI_Comm_get_info only returns the keys it knows.
bool locally_allowed(MPI_Comm comm, const CommEntry* entry) {
  if (entry->opted_out) return false;
  bool allowed = true;
  MPI_Info info = MPI_INFO_NULL;
  if (PMPI_Comm_get_info(comm, &info) == MPI_SUCCESS && info != MPI_INFO_NULL) {
    allowed = !info_opts_out(info);
    PMPI_Info_free(&info);
  }
  return allowed;
}

// Whether every rank says yes (MIN over the shim's own communicator).
bool all_agree(MPI_Comm own, bool local) {
  int mine = local ? 1 : 0, all = 0;
  return PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, own) == MPI_SUCCESS && all == 1;
}

// Seeds the auto policy's curves of a new communicator from OCTET_CALIBRATION. Collective; the
// outcome is the same on every rank (rank 0's file), so on a bad file every rank frees the
// communicator and its calls pass through.
octet_comm load_calibration(MPI_Comm own, octet_comm comm) {
  const char* path = g_state.config.calibration;
  if (!path[0] || octet_policy_load_curves(comm, path) == OCTET_OK) return comm;
  int rank = 0;
  PMPI_Comm_rank(own, &rank);
  if (rank == 0)
    std::fprintf(stderr,
                 "octet-pmpi: OCTET_CALIBRATION: %s; calls on this communicator pass "
                 "through\n",
                 octet_last_error_message());
  octet_comm_free(comm);
  return nullptr;
}

// Creates the Octet communicator over the shim's own one; every rank learns whether all
// succeeded, so that a failure on one rank makes all of them pass through instead of
// deadlocking.
octet_comm agreed_create(MPI_Comm own) {
  octet_comm created = nullptr;
  const octet_status s = octet_comm_from_mpi(own, &created);
  if (all_agree(own, s == OCTET_OK)) return load_calibration(own, created);
  if (s != OCTET_OK)
    std::fprintf(stderr,
                 "octet-pmpi: rank %d: cannot create an Octet communicator (%s); "
                 "calls on this communicator pass through\n",
                 g_state.world_rank, octet_last_error_message());
  return nullptr;  // a communicator created on some ranks only is left alone, not freed
}

// The first eligible call on comm: the one collective the shim makes on the user's communicator
// is MPI_Comm_dup, whose matching is internal to MPI (never against the application's traffic).
// Everything after it happens on the duplicate.
bool set_up(MPI_Comm comm, CommEntry* entry) {
  if (entry->own == MPI_COMM_NULL && PMPI_Comm_dup(comm, &entry->own) != MPI_SUCCESS) {
    entry->own = MPI_COMM_NULL;
    return false;
  }
  if (!all_agree(entry->own, locally_allowed(comm, entry))) return false;
  if (!entry->comm) entry->comm = agreed_create(entry->own);
  return entry->comm != nullptr;
}

// The entry attached to comm, attaching a new (undecided) one if there is none. Local.
CommEntry* find_or_add_entry(MPI_Comm comm) {
  if (!g_state.active) return nullptr;
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, g_keyval, &value, &found) != MPI_SUCCESS) return nullptr;
  if (found) return static_cast<CommEntry*>(value);
  auto* entry = new CommEntry;
  if (PMPI_Comm_set_attr(comm, g_keyval, entry) != MPI_SUCCESS) {
    delete entry;
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  entry->id = g_next_id++;
  g_entries.push_back(entry);
  return entry;
}

}  // namespace

const State& state() {
  return g_state;
}

void after_init() {
  State& s = g_state;
  if (s.initialized) return;  // MPI_INIT from Fortran may also pass through the C MPI_Init
  octet_shim_config_from_env(&s.config);
  PMPI_Comm_rank(MPI_COMM_WORLD, &s.world_rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &s.world_size);
  int level = MPI_THREAD_SINGLE;
  PMPI_Query_thread(&level);
  // The configuration's fields and whether MPI gave MPI_THREAD_MULTIPLE (which the progress
  // thread needs): MIN of (f, -f) gives the minimum and the maximum of each in one call.
  constexpr int n = OCTET_SHIM_CONFIG_FIELDS + 1;
  int64_t local[2 * n], all[2 * n];
  octet_shim_config_fields(&s.config, local);
  local[n - 1] = level == MPI_THREAD_MULTIPLE;
  for (int i = 0; i < n; ++i) local[n + i] = -local[i];
  const int rc = PMPI_Allreduce(local, all, 2 * n, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  s.agreed = rc == MPI_SUCCESS;
  for (int i = 0; i < n && s.agreed; ++i) s.agreed = all[i] == local[i] && -all[n + i] == local[i];
  s.threads_ok = s.agreed && level == MPI_THREAD_MULTIPLE;
  s.active = s.agreed && s.config.valid && s.config.enable;
  s.recording = s.agreed && s.config.valid && s.config.report[0] != '\0';
  explain_configuration();
  if (s.active) PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_entry, &g_keyval, nullptr);
  if (g_keyval == MPI_KEYVAL_INVALID) s.active = false;
  create_error_codes();
  s.initialized = true;
  // Every rank is here: set MPI_COMM_WORLD up now, so that its first eligible call, perhaps a
  // nonblocking one, does not have to (other communicators are set up at their first one).
  if (s.active) comm_entry(MPI_COMM_WORLD);
}

void before_finalize() {
  if (!g_state.initialized) return;
  stop_progress();
  write_report();
  // Free the Octet communicators while MPI still works, in creation order (the same on every
  // rank); the attributes stay and their delete callbacks then find nothing left to free.
  std::lock_guard<std::mutex> lock(g_mutex);
  for (CommEntry* entry : g_entries) free_entry_comm(entry);
  g_state.active = false;
}

// No lock around the collective rounds: MPI already requires the calls on one communicator to
// be ordered, and holding a lock across a collective could deadlock two threads on two others.
CommEntry* comm_entry(MPI_Comm comm) {
  CommEntry* entry = find_or_add_entry(comm);
  if (!entry) return nullptr;
  if (entry->decided) return entry->allowed ? entry : nullptr;
  entry->allowed = can_compress(comm) && set_up(comm, entry);
  entry->decided = true;
  return entry->allowed ? entry : nullptr;
}

octet_comm entry_comm(const CommEntry* entry) {
  return entry->comm;
}
uint64_t entry_id(const CommEntry* entry) {
  return entry->id;
}

uint64_t next_call_index(CommEntry* entry) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return entry->calls++;
}

void info_changed(MPI_Comm comm, MPI_Info info) {
  if (comm == MPI_COMM_NULL) return;
  CommEntry* entry = find_or_add_entry(comm);
  if (!entry) return;
  entry->opted_out = info_opts_out(info);
  const int p2p = info_flag(info, "octet_p2p");
  if (p2p >= 0) entry->p2p_wanted = p2p == 1;
  // MPI_Comm_set_info is collective: set the communicator up and agree now, on the shim's own
  // communicator, rather than at the next eligible call (which may be a nonblocking one, or a
  // point-to-point one, that must not wait for the others). Every rank makes the same rounds.
  entry->decided = false;
  comm_entry(comm);
  if (entry->own == MPI_COMM_NULL) return;
  const bool p2p_ok = entry->allowed && g_state.threads_ok && entry->p2p_wanted;
  entry->p2p = all_agree(entry->own, p2p_ok);
  if (entry->p2p_wanted && !g_state.threads_ok && g_state.world_rank == 0)
    std::fprintf(stderr,
                 "octet-pmpi: octet_p2p needs the progress thread (OCTET_PROGRESS=thread and "
                 "MPI_THREAD_MULTIPLE); point-to-point on this communicator passes through\n");
}

CommEntry* p2p_entry(MPI_Comm comm) {
  if (!g_state.active || comm == MPI_COMM_NULL) return nullptr;
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, g_keyval, &value, &found) != MPI_SUCCESS || !found) return nullptr;
  auto* entry = static_cast<CommEntry*>(value);
  return entry->p2p ? entry : nullptr;
}

int error_code(octet_status status, const char* what) {
  const int index = status >= 1 && status <= OCTET_ERR_INTERNAL ? status : OCTET_ERR_INTERNAL;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_errors_printed++ < 5)  // the detail text only exists here: show it, but do not flood
      std::fprintf(stderr, "octet-pmpi: rank %d: compressed %s failed: %s\n", g_state.world_rank,
                   what, octet_last_error_message());
  }
  return g_error_codes[index] ? g_error_codes[index] : MPI_ERR_OTHER;
}

int raise_error(MPI_Comm comm, octet_status status, const char* what) {
  const int code = error_code(status, what);
  PMPI_Comm_call_errhandler(comm, code);
  return code;
}

int wanted_thread_level(int required) {
  octet_shim_config c;
  octet_shim_config_from_env(&c);
  const bool background = c.valid && c.enable && !c.shadow &&
                          c.progress == OCTET_SHIM_PROGRESS_THREAD &&
                          octet_shim_config_wants(&c, OCTET_SHIM_OP_IALLREDUCE);
  return background ? MPI_THREAD_MULTIPLE : required;
}

}  // namespace octet_pmpi
