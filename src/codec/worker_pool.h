// A persistent pool of worker threads for the codec's multi-threaded block loops. Header-only on
// purpose: codec.cc is its only user.
//
// Plain std::thread, not OpenMP or TBB: the PMPI shim loads the codec into unmodified MPI
// programs, whose own OpenMP runtime could collide with ours.
//
// Concurrency: any number of threads may call run() at once (MPI_THREAD_MULTIPLE programs encode
// on several communicators). Jobs queue up, workers take parts from the oldest job, and every
// caller also runs the unclaimed parts of its own job. So a job finishes even when all workers are
// busy elsewhere, and a part that itself calls run() cannot deadlock: a caller only ever waits for
// parts that some thread is already running.
//
// Shutdown: the pool is never destroyed and its workers are detached. At exit they are blocked in
// a condition-variable wait and die with the process; nothing joins them, so nothing can hang.
// A destructor that joined them would run during static destruction, possibly before another
// static's destructor or atexit handler still encodes (a PMPI program's late MPI_Finalize).
//
// fork(): the child has only the forking thread, so the inherited pool has no workers and its
// mutex may be held by a thread that no longer exists. The pool remembers the pid that created
// it; a process with another pid creates a fresh pool and leaks the inherited one untouched.
#pragma once

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>

namespace octet {
namespace codec {

// The number of CPUs, read once: glibc's hardware_concurrency() reads /sys on every call (several
// microseconds, as long as encoding a small tensor).
inline int hardware_threads() {
  static const int n = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return n;
}

class WorkerPool {
 public:
  // This process's pool, created on first use.
  static WorkerPool& instance();

  // Calls fn(part) once for every part in [0, parts) and returns when all calls have returned.
  // The calling thread runs parts too; at most parts - 1 workers (and hardware_threads() - 1 in
  // all) help. If a part throws, the parts not yet started are skipped and the first exception is
  // rethrown here once no part is running any more.
  template <typename Fn>
  void run(int parts, Fn& fn);

 private:
  struct Job {
    void (*call)(void* fn, int part);
    void* fn;
    int parts;
    int next = 0;              // first part not yet claimed
    int unfinished;            // parts not yet returned
    std::exception_ptr error;  // of the first part that threw
    std::condition_variable done;
  };

  explicit WorkerPool(pid_t pid) : pid_(pid) {}

  void start_workers(int wanted);
  void work();
  void run_next_part(Job& job, std::unique_lock<std::mutex>& lock);

  const pid_t pid_;
  std::mutex mutex_;                // guards everything below and every queued Job
  std::condition_variable queued_;  // a job with unclaimed parts was queued
  std::deque<Job*> queue_;          // jobs with unclaimed parts, oldest first
  int workers_ = 0;
};

inline WorkerPool& WorkerPool::instance() {
  // An atomic pointer (constant-initialized, trivially destructible) rather than a function-local
  // static object: nothing to destroy at exit, and it can be replaced in a forked child.
  static std::atomic<WorkerPool*> current{nullptr};
  const pid_t pid = getpid();
  WorkerPool* pool = current.load(std::memory_order_acquire);
  while (pool == nullptr || pool->pid_ != pid) {
    auto* fresh = new WorkerPool(pid);
    if (current.compare_exchange_strong(pool, fresh, std::memory_order_acq_rel)) return *fresh;
    delete fresh;  // another thread of this process installed one first: `pool` now holds it
  }
  return *pool;
}

template <typename Fn>
void WorkerPool::run(int parts, Fn& fn) {
  Job job;
  job.call = [](void* f, int part) { (*static_cast<Fn*>(f))(part); };
  job.fn = &fn;
  job.parts = job.unfinished = parts;
  std::unique_lock<std::mutex> lock(mutex_);
  start_workers(std::min(parts, hardware_threads()) - 1);
  queue_.push_back(&job);
  for (int i = 1; i < parts; ++i) queued_.notify_one();
  while (job.next < job.parts) run_next_part(job, lock);
  // `job` lives on this stack: wait until no worker runs one of its parts any more.
  job.done.wait(lock, [&] { return job.unfinished == 0; });
  if (job.error) std::rethrow_exception(job.error);
}

// Starts workers until there are `wanted` (mutex_ held). A thread that cannot be started
// (resource limits) is not an error: callers then run more parts themselves.
inline void WorkerPool::start_workers(int wanted) {
  if (workers_ >= wanted) return;
  // Workers inherit this mask: asynchronous signals stay with the application's own threads.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  try {
    for (; workers_ < wanted; ++workers_) std::thread([this] { work(); }).detach();
  } catch (const std::system_error&) {
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

inline void WorkerPool::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    queued_.wait(lock, [&] { return !queue_.empty(); });
    run_next_part(*queue_.front(), lock);
  }
}

// Claims the next part of `job` and runs it with the mutex released; `lock` is held on entry and
// on return. Exceptions stop here, so none can escape a worker thread.
inline void WorkerPool::run_next_part(Job& job, std::unique_lock<std::mutex>& lock) {
  const int part = job.next++;
  if (job.next == job.parts) queue_.erase(std::find(queue_.begin(), queue_.end(), &job));
  const bool skip = job.error != nullptr;
  lock.unlock();
  std::exception_ptr error;
  if (!skip) {
    try {
      job.call(job.fn, part);
    } catch (...) {
      error = std::current_exception();
    }
  }
  lock.lock();
  if (error && !job.error) job.error = error;
  // Notified under the mutex: the caller cannot return and destroy `job` before this is done.
  if (--job.unfinished == 0) job.done.notify_one();
}

}  // namespace codec
}  // namespace octet
