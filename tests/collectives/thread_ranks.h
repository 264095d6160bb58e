// Ranks as threads: the harness of the in-process collective tests.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "octet/collectives.h"
#include "octet/transport.h"

namespace octet {
namespace test {

// Runs fn(comm) for each rank over transports[rank], each on its own thread; returns every rank's
// exception (null where it returned normally).
inline std::vector<std::exception_ptr> run_on_threads(
    const std::vector<std::shared_ptr<Transport>>& transports,
    const std::function<void(Comm&)>& fn) {
  std::vector<std::exception_ptr> errors(transports.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < transports.size(); ++r)
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

// The same over `size` connected thread transports.
inline std::vector<std::exception_ptr> run_on_threads(int size,
                                                      const std::function<void(Comm&)>& fn) {
  return run_on_threads(make_thread_transports(size), fn);
}

// No rank failed.
inline void expect_ok(const std::vector<std::exception_ptr>& errors) {
  for (size_t r = 0; r < errors.size(); ++r) {
    if (!errors[r]) continue;
    try {
      std::rethrow_exception(errors[r]);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "rank " << r << ": " << e.what();
    }
  }
}

// Every rank failed with `code`.
inline void expect_all(const std::vector<std::exception_ptr>& errors, ErrorCode code) {
  for (size_t r = 0; r < errors.size(); ++r) {
    ASSERT_TRUE(errors[r]) << "rank " << r << " did not fail";
    try {
      std::rethrow_exception(errors[r]);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << "rank " << r << ": " << e.what();
    }
  }
}

}  // namespace test
}  // namespace octet
