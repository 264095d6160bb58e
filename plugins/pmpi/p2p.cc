// Compressed point-to-point on communicators that opted in (info key octet_p2p = true).
//
// A compressed message is one MPI message of bytes, sent on the application's own communicator
// with the application's tag, so MPI's matching and non-overtaking order hold for it as for any
// other message: a 32-byte frame (magic, float count, body size) followed by an Octet payload.
// fp32 messages below OCTET_MIN_BYTES, and messages of other types, travel unchanged.
//
// Receiving must see a message before it is received (its size is unknown and it may need
// decoding), so on such a communicator every receive goes through one matcher: receives are
// matched in the order they were posted, each with MPI_Improbe + MPI_Mrecv, and a message found
// by MPI_Probe/MPI_Iprobe is received into a stash, where later receives find it first (it is
// older than anything of its sender still inside MPI). Probes report what the application sent.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "shim.h"

namespace octet_pmpi {
namespace {

constexpr uint64_t kMagic = 0x5032505445544F43ull;  // "OCTETP2P"
constexpr size_t kFrame = 32;

struct Frame {
  uint64_t magic, count, body, reserved;
};

bool is_fp32(MPI_Datatype type) {
  return type == MPI_FLOAT;
}

// The frame at the start of bytes, if the message is a compressed one.
bool read_frame(const std::vector<uint8_t>& bytes, Frame* f) {
  if (bytes.size() < kFrame) return false;
  std::memcpy(f, bytes.data(), sizeof *f);
  return f->magic == kMagic && f->body == bytes.size() - kFrame;
}

struct Receive {
  void* buf;
  int count;
  MPI_Datatype type;
  int source, tag;
  bool done = false;
  int code = MPI_SUCCESS;
  MPI_Status status{};
  int64_t floats = -1;  // elements received, when the message was a compressed one
};

struct Stashed {
  MPI_Status status;
  std::vector<uint8_t> bytes;
};

bool matches(int want_source, int want_tag, const MPI_Status& s) {
  return (want_source == MPI_ANY_SOURCE || want_source == s.MPI_SOURCE) &&
         (want_tag == MPI_ANY_TAG || want_tag == s.MPI_TAG);
}
bool overlap(const Receive& a, const Receive& b) {
  return (a.source == MPI_ANY_SOURCE || b.source == MPI_ANY_SOURCE || a.source == b.source) &&
         (a.tag == MPI_ANY_TAG || b.tag == MPI_ANY_TAG || a.tag == b.tag);
}

// The status an application sees: MPI's source and tag, the count it sent, and `code` (MPI
// leaves MPI_ERROR unset after single receives; Waitall and friends read it).
void report(MPI_Status* out, const MPI_Status& in, int64_t floats, int code = MPI_SUCCESS) {
  *out = in;
  out->MPI_ERROR = code;
  if (floats >= 0) PMPI_Status_set_elements(out, MPI_FLOAT, static_cast<int>(floats));
}

int truncate_code() {
  return MPI_ERR_TRUNCATE;
}

// Puts a received message (bytes) into a receive's buffer, as MPI would have.
void deliver(Receive* r, const std::vector<uint8_t>& bytes, const MPI_Status& status) {
  r->status = status;
  r->done = true;
  Frame f;
  if (is_fp32(r->type) && read_frame(bytes, &f)) {
    r->floats = static_cast<int64_t>(f.count);
    if (f.count > static_cast<uint64_t>(r->count)) {
      r->code = truncate_code();
      return;
    }
    const octet_status s =
        octet_decode(bytes.data() + kFrame, f.body, static_cast<float*>(r->buf), f.count);
    if (s != OCTET_OK) r->code = error_code(s, "receive");
    return;
  }
  // A message that travelled unchanged (an fp32 one below the threshold, or one of another type
  // that a probe stashed): MPI's own unpacking of what arrived.
  int size = 0;
  PMPI_Type_size(r->type, &size);
  r->status = status;
  PMPI_Status_set_elements(&r->status, MPI_BYTE, static_cast<int>(bytes.size()));
  if (size <= 0 || bytes.size() > static_cast<size_t>(size) * static_cast<size_t>(r->count)) {
    r->code = size <= 0 ? MPI_ERR_TYPE : truncate_code();
    return;
  }
  int position = 0;
  r->code = PMPI_Unpack(bytes.data(), static_cast<int>(bytes.size()), &position, r->buf,
                        static_cast<int>(bytes.size() / static_cast<size_t>(size)), r->type,
                        MPI_COMM_SELF);
}

// Receives the probed message msg as bytes.
std::vector<uint8_t> receive_bytes(MPI_Message* msg, const MPI_Status& probed, MPI_Status* got) {
  int bytes = 0;
  PMPI_Get_count(&probed, MPI_BYTE, &bytes);
  std::vector<uint8_t> data(static_cast<size_t>(bytes));
  PMPI_Mrecv(data.data(), bytes, MPI_BYTE, msg, got);
  return data;
}

// The receives and the stash of one communicator.
class Matcher {
 public:
  explicit Matcher(MPI_Comm comm) : comm_(comm) {}

  // Tries the posted receives in posting order; a receive that finds nothing keeps those after
  // it that could match the same messages from being tried (they must not overtake it).
  void progress() {
    std::vector<const Receive*> waiting;
    for (auto it = posted_.begin(); it != posted_.end();) {
      Receive* r = *it;
      bool blocked = false;
      for (const Receive* w : waiting) blocked = blocked || overlap(*w, *r);
      if (blocked || !try_receive(r)) {
        waiting.push_back(r);
        ++it;
        continue;
      }
      it = posted_.erase(it);
    }
  }

  void post(Receive* r) { posted_.push_back(r); }

  // A probe: the first message a receive (source, tag) would get, reported but not received.
  bool probe(int source, int tag, MPI_Status* status) {
    progress();
    for (const Stashed& m : stash_)
      if (matches(source, tag, m.status)) return report_stashed(m, status);
    for (const Receive* r : posted_)  // an earlier receive will take what matches it
      if (overlap(*r, Receive{nullptr, 0, MPI_BYTE, source, tag})) return false;
    int found = 0;
    MPI_Message msg;
    MPI_Status probed{};
    if (PMPI_Improbe(source, tag, comm_, &found, &msg, &probed) != MPI_SUCCESS || !found)
      return false;
    Stashed m{};
    m.bytes = receive_bytes(&msg, probed, &m.status);
    stash_.push_back(std::move(m));
    return report_stashed(stash_.back(), status);
  }

  std::mutex mutex;

 private:
  static bool report_stashed(const Stashed& m, MPI_Status* status) {
    Frame f;
    report(status, m.status, read_frame(m.bytes, &f) ? static_cast<int64_t>(f.count) : -1);
    return true;
  }

  bool try_receive(Receive* r) {
    for (auto it = stash_.begin(); it != stash_.end(); ++it) {
      if (!matches(r->source, r->tag, it->status)) continue;
      deliver(r, it->bytes, it->status);
      stash_.erase(it);
      return true;
    }
    int found = 0;
    MPI_Message msg;
    MPI_Status probed{};
    if (PMPI_Improbe(r->source, r->tag, comm_, &found, &msg, &probed) != MPI_SUCCESS || !found)
      return false;
    if (!is_fp32(r->type)) {  // MPI receives it itself, with its own checks
      r->code = PMPI_Mrecv(r->buf, r->count, r->type, &msg, &r->status);
      r->done = true;
      return true;
    }
    MPI_Status got{};
    const std::vector<uint8_t> bytes = receive_bytes(&msg, probed, &got);
    deliver(r, bytes, got);
    return true;
  }

  MPI_Comm comm_;
  std::deque<Receive*> posted_;
  std::deque<Stashed> stash_;
};

std::mutex g_matchers_mutex;
std::map<const CommEntry*, std::unique_ptr<Matcher>> g_matchers;

Matcher& matcher(const CommEntry* e, MPI_Comm comm) {
  std::lock_guard<std::mutex> lock(g_matchers_mutex);
  auto& m = g_matchers[e];
  if (!m) m = std::make_unique<Matcher>(comm);
  return *m;
}

// One step of a receive; true once it is done.
bool step(Matcher& m, const Receive* r) {
  std::lock_guard<std::mutex> lock(m.mutex);
  m.progress();
  return r->done;
}

int finish_receive(const Receive& r, MPI_Comm comm, MPI_Status* status) {
  if (status != MPI_STATUS_IGNORE) report(status, r.status, r.floats, r.code);
  if (r.code != MPI_SUCCESS) PMPI_Comm_call_errhandler(comm, r.code);
  return r.code;
}

// The frame and payload of count floats; empty when the message goes unchanged.
std::vector<uint8_t> encode_message(const float* buf, int count) {
  const octet_shim_config& c = state().config;
  if (count <= 0 || 4ull * static_cast<uint64_t>(count) < c.min_bytes) return {};
  octet_options o;
  octet_options_init(&o);
  o.type = c.type;
  o.block_size = c.block;
  o.stochastic = c.stochastic;
  static std::atomic<uint64_t> sends{0};
  o.seed = ++sends * 0x9E3779B97F4A7C15ull;  // a fresh stream per message
  size_t capacity = 0, written = 0;
  if (octet_max_encoded_size(static_cast<size_t>(count), &o, &capacity) != OCTET_OK) return {};
  std::vector<uint8_t> out(kFrame + capacity);
  if (octet_encode(buf, static_cast<size_t>(count), &o, out.data() + kFrame, capacity, &written) !=
      OCTET_OK)
    return {};  // the values go unchanged instead
  out.resize(kFrame + written);
  const Frame f{kMagic, static_cast<uint64_t>(count), written, 0};
  std::memcpy(out.data(), &f, sizeof f);
  return out;
}

// MPI's own answer for arguments a receive cannot take (MPI_PROC_NULL is handled by MPI too).
bool pass_through(int count, int peer) {
  return count < 0 || peer == MPI_PROC_NULL;
}

}  // namespace

int p2p_send(CommEntry*, const void* buf, int count, MPI_Datatype type, int dest, int tag,
             MPI_Comm comm) {
  if (!is_fp32(type) || pass_through(count, dest))
    return PMPI_Send(buf, count, type, dest, tag, comm);
  const std::vector<uint8_t> m = encode_message(static_cast<const float*>(buf), count);
  if (m.empty()) return PMPI_Send(buf, count, type, dest, tag, comm);
  return PMPI_Send(m.data(), static_cast<int>(m.size()), MPI_BYTE, dest, tag, comm);
}

int p2p_isend(CommEntry*, const void* buf, int count, MPI_Datatype type, int dest, int tag,
              MPI_Comm comm, MPI_Request* request) {
  if (!is_fp32(type) || pass_through(count, dest))
    return PMPI_Isend(buf, count, type, dest, tag, comm, request);
  auto m =
      std::make_shared<std::vector<uint8_t>>(encode_message(static_cast<const float*>(buf), count));
  if (m->empty()) return PMPI_Isend(buf, count, type, dest, tag, comm, request);
  MPI_Request inner = MPI_REQUEST_NULL;
  int rc = PMPI_Isend(m->data(), static_cast<int>(m->size()), MPI_BYTE, dest, tag, comm, &inner);
  if (rc != MPI_SUCCESS) return rc;
  // The application waits on a generalized request that the progress thread completes once the
  // bytes are sent (they must live until then).
  rc = start_generalized(request);
  if (rc != MPI_SUCCESS) return rc;
  const MPI_Request outer = *request;
  poll_in_background([m, inner, outer]() mutable {
    int done = 0;
    PMPI_Test(&inner, &done, MPI_STATUS_IGNORE);
    if (done) PMPI_Grequest_complete(outer);
    return done != 0;
  });
  return MPI_SUCCESS;
}

int p2p_recv(CommEntry* e, void* buf, int count, MPI_Datatype type, int source, int tag,
             MPI_Comm comm, MPI_Status* status) {
  if (pass_through(count, source)) return PMPI_Recv(buf, count, type, source, tag, comm, status);
  Matcher& m = matcher(e, comm);
  Receive r{buf, count, type, source, tag};
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    m.post(&r);
  }
  while (!step(m, &r)) std::this_thread::yield();
  return finish_receive(r, comm, status);
}

int p2p_irecv(CommEntry* e, void* buf, int count, MPI_Datatype type, int source, int tag,
              MPI_Comm comm, MPI_Request* request) {
  if (pass_through(count, source)) return PMPI_Irecv(buf, count, type, source, tag, comm, request);
  Matcher& m = matcher(e, comm);
  auto* r = new Receive{buf, count, type, source, tag};
  const int rc = start_receive_request(r, request);
  if (rc != MPI_SUCCESS) {
    delete r;
    return rc;
  }
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    m.post(r);
  }
  const MPI_Request outer = *request;
  poll_in_background([&m, r, outer] {
    if (!step(m, r)) return false;
    PMPI_Grequest_complete(outer);
    return true;
  });
  return MPI_SUCCESS;
}

int p2p_sendrecv(CommEntry* e, const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                 int sendtag, void* recvbuf, int recvcount, MPI_Datatype recvtype, int source,
                 int recvtag, MPI_Comm comm, MPI_Status* status) {
  std::vector<uint8_t> m;
  if (is_fp32(sendtype) && !pass_through(sendcount, dest))
    m = encode_message(static_cast<const float*>(sendbuf), sendcount);
  MPI_Request send = MPI_REQUEST_NULL;
  int rc = m.empty() ? PMPI_Isend(sendbuf, sendcount, sendtype, dest, sendtag, comm, &send)
                     : PMPI_Isend(m.data(), static_cast<int>(m.size()), MPI_BYTE, dest, sendtag,
                                  comm, &send);
  if (rc != MPI_SUCCESS) return rc;
  rc = p2p_recv(e, recvbuf, recvcount, recvtype, source, recvtag, comm, status);
  const int sent = PMPI_Wait(&send, MPI_STATUS_IGNORE);
  return rc != MPI_SUCCESS ? rc : sent;
}

int p2p_probe(CommEntry* e, int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status,
              bool blocking) {
  if (source == MPI_PROC_NULL)
    return blocking ? PMPI_Probe(source, tag, comm, status)
                    : PMPI_Iprobe(source, tag, comm, flag, status);
  Matcher& m = matcher(e, comm);
  MPI_Status s{};
  for (;;) {
    bool found;
    {
      std::lock_guard<std::mutex> lock(m.mutex);
      found = m.probe(source, tag, &s);
    }
    if (found || !blocking) {
      if (flag) *flag = found;
      if (found && status != MPI_STATUS_IGNORE) *status = s;
      return MPI_SUCCESS;
    }
    std::this_thread::yield();
  }
}

// The generalized request of a compressed receive: its status is the receive's.
namespace {
int query_receive(void* state, MPI_Status* status) {
  const auto* r = static_cast<const Receive*>(state);
  report(status, r->status, r->floats, r->code);
  PMPI_Status_set_cancelled(status, 0);
  return r->code;
}
int free_receive(void* state) {
  delete static_cast<Receive*>(state);
  return MPI_SUCCESS;
}
int cancel_nothing(void*, int) {
  return MPI_SUCCESS;
}
int query_sent(void*, MPI_Status* status) {
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
  return MPI_SUCCESS;
}
int free_nothing(void*) {
  return MPI_SUCCESS;
}
}  // namespace

int start_receive_request(void* receive, MPI_Request* request) {
  return PMPI_Grequest_start(query_receive, free_receive, cancel_nothing, receive, request);
}

int start_generalized(MPI_Request* request) {
  return PMPI_Grequest_start(query_sent, free_nothing, cancel_nothing, nullptr, request);
}

void p2p_forget(const CommEntry* entry) {
  // A receive still posted (a freed communicator with a receive pending) may still point at the
  // matcher: it is kept, unreachable from a new communicator that reuses the entry's address.
  static std::vector<std::unique_ptr<Matcher>> retired;
  std::lock_guard<std::mutex> lock(g_matchers_mutex);
  auto it = g_matchers.find(entry);
  if (it == g_matchers.end()) return;
  retired.push_back(std::move(it->second));
  g_matchers.erase(it);
}

}  // namespace octet_pmpi
