// The automatic chunk size (CollectiveOptions::chunk_bytes = 0, docs/algorithms.md "Pipeline"):
// compressed messages of a group that spans hosts fit the transport's eager limit, and fill it;
// everything else keeps 1 MiB chunks of fp32.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "counting_transport.h"
#include "octet/collectives.h"
#include "thread_ranks.h"
#include "verify/verify.h"

namespace octet {
namespace {

using test::CountingTransport;
using test::expect_ok;

constexpr size_t kEager = kMpiEagerBytes;
constexpr size_t kHeaderRoom = kChunkHeaderRoom;

// The largest message any rank sent in a compressed allreduce of n elements per rank (rank r on
// host hosts[r]; every transport reporting `eager` as its eager limit).
uint64_t largest_message(const std::vector<int>& hosts, size_t eager, const CollectiveOptions& o,
                         size_t n = size_t{1} << 20) {
  std::vector<std::shared_ptr<Transport>> wrapped;
  std::vector<std::shared_ptr<CountingTransport>> counting;
  for (auto& t : make_thread_transports(hosts)) {
    counting.push_back(std::make_shared<CountingTransport>(t));
    counting.back()->eager = eager;
    wrapped.push_back(counting.back());
  }
  std::vector<std::vector<float>> out(hosts.size());
  expect_ok(test::run_on_threads(wrapped, [&](Comm& c) {
    std::vector<float> x = verify::input(c.rank(), n), y(n);
    allreduce(c, x.data(), y.data(), n, o);
    out[static_cast<size_t>(c.rank())] = y;
  }));
  for (const auto& y : out) EXPECT_EQ(y, out[0]);  // the chunking is agreed: every rank the same
  uint64_t largest = 0;
  for (const auto& c : counting) largest = std::max(largest, c->largest);
  return largest;
}

CollectiveOptions always(DataType type = DataType::kDynamic) {
  CollectiveOptions o;
  o.policy = Policy::kAlways;
  o.codec.type = type;
  o.allreduce_algorithm = CollectiveOptions::AllreduceAlgorithm::kFlat;
  return o;
}

TEST(ChunkSize, CompressedMessagesBetweenHostsFitTheEagerLimitAndFillIt) {
  for (DataType type : {DataType::kDynamic, DataType::kDynamic4}) {
    const uint64_t largest = largest_message({0, 1, 2, 3}, kEager, always(type));
    EXPECT_LE(largest, kEager - kHeaderRoom) << data_type_name(type);
    // One more block would not fit: the chunk is as large as the limit allows.
    const size_t block = default_block_size(type);
    const CodecOptions& codec = always(type).codec;
    const size_t per_block = encoded_size(2 * block, codec) - encoded_size(block, codec);
    EXPECT_GT(largest + per_block, kEager - kHeaderRoom) << data_type_name(type);
  }
}

TEST(ChunkSize, OneHostNoLimitOrAnExplicitSizeKeepLargeChunks) {
  // 1 MiB of fp32 per chunk: about 256 KiB compressed.
  EXPECT_GT(largest_message({0, 0, 0, 0}, kEager, always()), 4 * kEager / 2);
  EXPECT_GT(largest_message({0, 1, 2, 3}, 0, always()), 4 * kEager / 2);
  CollectiveOptions o = always();
  o.chunk_bytes = size_t{1} << 20;
  EXPECT_GT(largest_message({0, 1, 2, 3}, kEager, o), 4 * kEager / 2);
}

}  // namespace
}  // namespace octet
