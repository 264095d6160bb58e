// Operation and Pipeline: the non-blocking engine every algorithm runs on.
#include "collectives/operation.h"

#include <algorithm>

namespace octet {
namespace detail {

bool Operation::step() {
  if (done_) return true;
  try {
    done_ = advance();
  } catch (...) {
    error_ = std::current_exception();
    done_ = true;
  }
  if (done_) finished();
  return done_;
}

void Operation::block_once() {
  if (done_) return;
  try {
    block();
  } catch (...) {
    error_ = std::current_exception();
    done_ = true;
    finished();
  }
}

bool gate_open(std::vector<TransportRequestPtr>& gate) {
  for (auto& r : gate)
    if (r && r->test()) r.reset();
  gate.erase(std::remove(gate.begin(), gate.end(), nullptr), gate.end());
  return gate.empty();
}

Pipeline::Pipeline(Comm& comm, size_t units, int stages, int window)
    : comm_(comm),
      units_(units),
      stages_(stages),
      window_(std::max(1, window)),
      turn_(static_cast<size_t>(stages), 0) {}

void Pipeline::run_first_stage_early() {
  if (units_ == 0 || !live_.empty()) return;
  live_.push_back(make_unit(0));
  Unit& unit = *live_.back();
  unit.gates.resize(static_cast<size_t>(stages_) + 1);
  run_stage(unit, 0, 0);
  ++turn_[0];
  ++unit.stage;
}

void Pipeline::drop_units() {
  live_.clear();
  std::fill(turn_.begin(), turn_.end(), 0);
  units_ = head_ = 0;
}

bool Pipeline::sweep() {
  bool changed = false;
  while (static_cast<int>(live_.size()) < window_ && head_ + live_.size() < units_) {
    live_.push_back(make_unit(head_ + live_.size()));
    live_.back()->gates.resize(static_cast<size_t>(stages_) + 1);
    changed = true;
  }
  for (size_t i = 0; i < live_.size(); ++i) {
    Unit& unit = *live_[i];
    const size_t u = head_ + i;
    while (unit.stage < stages_ && turn_[unit.stage] == u && gate_open(unit.gates[unit.stage])) {
      run_stage(unit, u, unit.stage);
      ++turn_[unit.stage];
      ++unit.stage;
      changed = true;
    }
  }
  while (!live_.empty() && live_.front()->stage == stages_ &&
         gate_open(live_.front()->gates[stages_])) {
    live_.pop_front();
    ++head_;
    changed = true;
  }
  return changed;
}

bool Pipeline::advance() {
  if (!prologue_done_) {
    prologue_done_ = prologue();
    if (!prologue_done_) return false;
  }
  while (sweep()) {
  }
  return head_ == units_;
}

void Pipeline::block() {
  if (!prologue_done_) {
    block_prologue();
    return;
  }
  if (live_.empty()) return;
  Unit& front = *live_.front();
  for (auto& r : front.gates[front.stage])
    if (r) {
      r->wait();
      r.reset();
      return;
    }
}

}  // namespace detail
}  // namespace octet
