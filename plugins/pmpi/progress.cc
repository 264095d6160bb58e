// Where compressed calls run. Eager mode (OCTET_PROGRESS=eager): on the caller's thread, to
// completion. Thread mode (the default): a compressed MPI_Iallreduce is handed to one progress
// thread, which starts Octet's nonblocking operation and tests it until it completes while the
// application computes; a blocking call runs on the caller's thread when nothing of its
// communicator is pending there, and otherwise queues behind it, so that the operations of one
// communicator start in the order the application issued them (MPI's rule for collectives,
// which keeps every rank's Octet operations matched).
//
// Octet communicators are not shared between threads: a communicator's operations are started
// and tested either by the progress thread or, while it owns it inline, by one caller.
#include <sched.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "shim.h"

namespace octet_pmpi {
namespace {

struct Job {
  const CommEntry* entry;
  StartFn start;
  FinishFn finish;
};

// What the progress thread is doing for one communicator.
struct Load {
  int pending = 0;           // jobs queued or running on the progress thread
  bool inline_busy = false;  // a caller runs an operation on this communicator itself
};

struct Running {
  const CommEntry* entry;
  octet_request request;
  FinishFn finish;
};

class Progress {
 public:
  octet_status run_blocking(const CommEntry* e, const StartFn& start) {
    std::unique_lock<std::mutex> lock(mutex_);
    Load& load = loads_[e];
    if (!thread_.joinable() || (load.pending == 0 && !load.inline_busy)) {
      load.inline_busy = true;
      lock.unlock();
      const octet_status status = run_inline(start);
      lock.lock();
      loads_[e].inline_busy = false;
      wake_.notify_all();
      return status;
    }
    // Queue behind the pending operations of this communicator and wait for the result.
    bool done = false;
    octet_status status = OCTET_OK;
    enqueue(lock, e, start, [&, this](octet_status s) {
      std::lock_guard<std::mutex> guard(mutex_);
      status = s;
      done = true;
      finished_.notify_all();
    });
    finished_.wait(lock, [&] { return done; });
    return status;
  }

  void run_background(const CommEntry* e, const StartFn& start, const FinishFn& finish) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    enqueue(lock, e, start, finish);
  }

  void poll_background(const PollFn& poll) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    polled_.push_back(poll);
    ++polled_pending_;
    wake_.notify_all();
  }

  // Waits until nothing of e (or of any communicator, for nullptr) is pending.
  void drain(const CommEntry* e) {
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [&] {
      if (e) return loads_[e].pending == 0;
      for (const auto& kv : loads_)
        if (kv.second.pending) return false;
      return polled_pending_ == 0;
    });
    if (e) loads_.erase(e);
  }

  void stop() {
    drain(nullptr);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      wake_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = false;
  }

 private:
  static octet_status run_inline(const StartFn& start) {
    octet_request request = nullptr;
    const octet_status s = start(&request);
    return s == OCTET_OK ? octet_wait(&request) : s;
  }

  void enqueue(std::unique_lock<std::mutex>&, const CommEntry* e, const StartFn& start,
               const FinishFn& finish) {
    ++loads_[e].pending;
    queue_.push_back({e, start, finish});
    wake_.notify_all();
  }

  // Starts the queued jobs whose communicator is free, in queue order per communicator.
  void start_ready(std::unique_lock<std::mutex>& lock) {
    std::vector<const CommEntry*> held;
    for (auto it = queue_.begin(); it != queue_.end();) {
      const CommEntry* e = it->entry;
      bool blocked = loads_[e].inline_busy;
      for (const CommEntry* h : held) blocked = blocked || h == e;
      if (blocked) {
        held.push_back(e);
        ++it;
        continue;
      }
      Job job = std::move(*it);
      it = queue_.erase(it);
      lock.unlock();
      octet_request request = nullptr;
      const octet_status s = job.start(&request);
      lock.lock();
      if (s == OCTET_OK)
        running_.push_back({job.entry, request, job.finish});
      else
        complete(lock, job.entry, job.finish, s);
      it = queue_.begin();  // the queue may have changed while unlocked: rescan
      held.clear();
    }
  }

  void complete(std::unique_lock<std::mutex>& lock, const CommEntry* e, const FinishFn& finish,
                octet_status s) {
    lock.unlock();
    finish(s);
    lock.lock();
    --loads_[e].pending;
    finished_.notify_all();
  }

  // Tests every running operation and polls every polled task once; returns whether one
  // completed.
  bool test_running(std::unique_lock<std::mutex>& lock) {
    bool any = false;
    for (size_t i = 0; i < polled_.size();) {
      const PollFn poll = polled_[i];
      lock.unlock();
      const bool done = poll();
      lock.lock();
      if (!done) {
        ++i;
        continue;
      }
      polled_.erase(polled_.begin() + static_cast<long>(i));
      --polled_pending_;
      finished_.notify_all();
      any = true;
    }
    for (size_t i = 0; i < running_.size();) {
      int done = 0;
      lock.unlock();
      const octet_status s = octet_test(&running_[i].request, &done);
      lock.lock();
      if (!done && s == OCTET_OK) {
        ++i;
        continue;
      }
      Running r = std::move(running_[i]);
      running_.erase(running_.begin() + static_cast<long>(i));
      complete(lock, r.entry, r.finish, s);
      any = true;
    }
    return any;
  }

  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      start_ready(lock);
      if (running_.empty() && polled_.empty()) {
        if (stopping_ && queue_.empty()) return;
        wake_.wait(lock);
        continue;
      }
      if (test_running(lock)) {
        idle_ = 0;
      } else {  // nothing finished: let the application's threads run, and back off
        lock.unlock();
        if (++idle_ < kSpins)
          sched_yield();
        else
          std::this_thread::sleep_for(std::chrono::microseconds(20));
        lock.lock();
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  std::deque<Job> queue_;
  std::vector<Running> running_;  // touched by the progress thread only (under mutex_)
  std::vector<PollFn> polled_;    // appended by callers, polled by the progress thread
  int polled_pending_ = 0;
  std::map<const CommEntry*, Load> loads_;
  std::thread thread_;
  bool stopping_ = false;
  // Tests without progress before the thread starts sleeping 20 us between tests: a peer that
  // is late costs the application's compute little CPU, a quick operation no latency.
  static constexpr int kSpins = 200;
  int idle_ = 0;
};

Progress& progress() {
  static Progress* p = new Progress;  // never destroyed: the thread is joined at MPI_Finalize
  return *p;
}

}  // namespace

octet_status run_compressed(const CommEntry* entry, const StartFn& start) {
  return progress().run_blocking(entry, start);
}

void start_compressed(const CommEntry* entry, const StartFn& start, const FinishFn& finish) {
  progress().run_background(entry, start, finish);
}

void poll_in_background(const PollFn& poll) {
  progress().poll_background(poll);
}

void drain_compressed(const CommEntry* entry) {
  progress().drain(entry);
}

void stop_progress() {
  progress().stop();
}

}  // namespace octet_pmpi
