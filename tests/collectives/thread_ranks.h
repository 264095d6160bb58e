// Ranks as threads: the harness of the in-process collective tests.
#pragma once

#include <exception>
#include <functional>
#include <thread>
#include <vector>

#include "octet/collectives.h"
#include "octet/transport.h"

namespace octet {
namespace test {

// Runs fn(comm) for each of `size` ranks, each on its own thread over the thread transport;
// returns every rank's exception (null where it returned normally).
inline std::vector<std::exception_ptr> run_on_threads(int size,
                                                      const std::function<void(Comm&)>& fn) {
  auto transports = make_thread_transports(size);
  std::vector<std::exception_ptr> errors(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      try {
        Comm comm(transports[r]);
        fn(comm);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

}  // namespace test
}  // namespace octet
