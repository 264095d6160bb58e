// The machinery shared by the algorithms: an Operation that advances without blocking, and a
// Pipeline that runs an operation's chunks ("units") through its stages, a window of units at a
// time, so that encoding chunk k+1 overlaps the transfer of chunk k.
#pragma once

#include <deque>
#include <exception>
#include <memory>
#include <vector>

#include "collectives/comm_core.h"
#include "octet/collectives.h"

namespace octet {
namespace detail {

class Operation {
 public:
  virtual ~Operation() = default;
  // Advances as far as possible without blocking; true once done. Errors end the operation and
  // are kept for Request::wait().
  bool step();
  // Blocks until one of the transfers the operation waits for completes.
  void block_once();
  bool done() const { return done_; }
  std::exception_ptr error() const { return error_; }

 protected:
  virtual bool advance() = 0;
  virtual void block() = 0;
  virtual void finished() {}  // called once, when the operation ends (either way)

 private:
  bool done_ = false;
  std::exception_ptr error_;
};

// One chunk of a pipelined operation. gates[s] holds the transfers that must complete before
// stage s runs; gates[stages] those that must complete before the unit is finished (sends).
struct Unit {
  virtual ~Unit() = default;
  int stage = 0;
  std::vector<std::vector<TransportRequestPtr>> gates;
  void await(int before_stage, TransportRequestPtr request) {
    gates[before_stage].push_back(std::move(request));
  }
};

// Units run stage by stage; stage s of unit u runs after stage s of unit u-1 (so that messages
// with one tag are posted in the same order on every rank) and once its gate is open.
class Pipeline : public Operation {
 public:
  Pipeline(Comm& comm, size_t units, int stages, int window);

 protected:
  // Runs before any unit (the descriptor exchange): true once finished; may throw.
  virtual bool prologue() { return true; }
  virtual void block_prologue() {}
  virtual std::unique_ptr<Unit> make_unit(size_t u) { return std::make_unique<Unit>(); }
  virtual void run_stage(Unit& unit, size_t u, int stage) = 0;

  bool advance() override;
  void block() override;
  void set_units(size_t units) { units_ = units; }
  size_t unit_count() const { return units_; }
  // Runs unit 0's stage 0 now, before the prologue has finished (CollectiveOp's early stage).
  void run_first_stage_early();
  void drop_units();  // forgets every unit, run or not (the early stage failed)
  Comm& comm_;

 private:
  bool sweep();  // one pass over the window; true if anything changed
  size_t units_, head_ = 0;
  int stages_, window_;
  bool prologue_done_ = false;
  std::deque<std::unique_ptr<Unit>> live_;  // units head_, head_ + 1, ...
  std::vector<size_t> turn_;                // per stage: the unit allowed to run it next
};

// Tests and drops the completed requests of a gate; true when none is left.
bool gate_open(std::vector<TransportRequestPtr>& gate);

}  // namespace detail
}  // namespace octet
