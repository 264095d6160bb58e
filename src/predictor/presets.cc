// Built-in scenarios, written in the same TOML schema as user files (docs/examples/ has them with
// comments). AlexNet numbers: paper 001's Tables 3-5; the modern models are illustrative.
#include <string>
#include <utility>
#include <vector>

#include "octet/detail/quoted.h"
#include "predictor/internal.h"
#include "predictor/predictor.h"

namespace octet {
namespace predictor {
namespace {

// Tables 3/4: per-layer times on one GPU at batch 128; "rest" is the whole-network time 104.1 ms
// less the layer rows (pooling and the like); fc layers are model parallel with sub-batches and
// run at 6.5 / (4 x 3.34) of ideal speed when split four ways.
const char* kAlexNetWorkload = R"toml(
[workload]
name = "AlexNet (paper 001)"
scheme = "hybrid"
batch = 128
sub_batch = 128
model_parallel_efficiency = 0.4865
layers = [
  { name = "conv1", params = 23232, forward = "4 ms", backward = "1 ms", update = "3.5 ms" },
  { name = "conv2", params = 307200, forward = "10 ms", backward = "11 ms", update = "11 ms" },
  { name = "conv3", params = 663552, forward = "5 ms", backward = "6 ms", update = "5 ms" },
  { name = "conv4", params = 884736, forward = "6.5 ms", backward = "5.5 ms", update = "6.5 ms" },
  { name = "conv5", params = 589824, forward = "4 ms", backward = "4 ms", update = "5 ms" },
  { name = "rest", params = 0, activations = 9216, forward = "9.6 ms", backward = "0 ms" },
  { name = "fc6", params = 28311552, activations = 3072, forward = "1.3 ms", backward = "1.3 ms", update = "1.5 ms", parallel = "model" },
  { name = "fc7", params = 9437184, activations = 3072, forward = "0.45 ms", backward = "0.45 ms", update = "0.5 ms", parallel = "model" },
  { name = "fc8", params = 3072000, activations = 1000, forward = "0.4 ms", backward = "0.4 ms", update = "0.2 ms", parallel = "model" },
]
# The paper's kernel: 1 ns per number to compress, 0.5 ns to decompress (GTX Titan).
[codec]
type = "dynamic"
encode = "4 GB/s"
decode = "8 GB/s"
)toml";

const char* kAlexNet4 = R"toml(
gpus = 4
[cluster]
gpus_per_node = 4
nodes = 1
intra = { bandwidth = "5 GB/s", latency = "10 us" }
)toml";

const char* kAlexNet96 = R"toml(
gpus = 96
[cluster]
gpus_per_node = 3
nodes = 32
intra = { bandwidth = "5 GB/s", latency = "10 us" }
inter = { bandwidth = "6 GB/s", latency = "30 us" }
)toml";

// ResNet-50, batch 64 per GPU, fp32, one layer per stage; about 190 ms a step on a V100-class
// GPU. 8 GPUs per node on NVLink, nodes on 100 Gbit/s Ethernet.
const char* kResNet50 = R"toml(
gpus = 32
[workload]
name = "ResNet-50"
scheme = "data"
batch = 64
layers = [
  { name = "stem", params = 9536, forward = "6 ms", backward = "12 ms" },
  { name = "stage1", params = 215808, forward = "13 ms", backward = "26 ms" },
  { name = "stage2", params = 1219584, forward = "14 ms", backward = "28 ms" },
  { name = "stage3", params = 7098368, forward = "20 ms", backward = "40 ms" },
  { name = "stage4", params = 14964736, forward = "11 ms", backward = "22 ms" },
  { name = "fc", params = 2049000, forward = "0.3 ms", backward = "0.6 ms" },
]
[cluster]
gpus_per_node = 8
nodes = 4
intra = { bandwidth = "150 GB/s", latency = "5 us" }
inter = { bandwidth = "100 Gbit/s", latency = "10 us" }
[codec]
type = "dynamic"
encode = "200 GB/s"
decode = "400 GB/s"
overhead = "5 us"
)toml";

// GPT-2 small (124M), 8 x 1024 tokens per GPU, data parallel; embedding includes the tied head.
const char* kGpt2 = R"toml(
gpus = 64
[workload]
name = "GPT-2 124M"
scheme = "data"
batch = 8
layers = [
  { name = "embedding+head", params = 39383808, forward = "4 ms", backward = "8 ms" },
  { name = "block1", params = 7087872, forward = "2.5 ms", backward = "5 ms" },
  { name = "block2", params = 7087872, forward = "2.5 ms", backward = "5 ms" },
  { name = "block3", params = 7087872, forward = "2.5 ms", backward = "5 ms" },
  { name = "block4", params = 7087872, forward = "2.5 ms", backward = "5 ms" },
  { name = "block5", params = 7087872, forward = "2.5 ms", backward = "5 ms" },
  { name = "block6", params = 7087872, forward = "2.5 ms", backward = "5 ms" },
  { name = "block7", params = 7087872, forward = "2.5 ms", backward = "5 ms" },
  { name = "block8", params = 7087872, forward = "2.5 ms", backward = "5 ms" },
  { name = "block9", params = 7087872, forward = "2.5 ms", backward = "5 ms" },
  { name = "block10", params = 7087872, forward = "2.5 ms", backward = "5 ms" },
  { name = "block11", params = 7087872, forward = "2.5 ms", backward = "5 ms" },
  { name = "block12", params = 7087872, forward = "2.5 ms", backward = "5 ms" },
]
[cluster]
gpus_per_node = 8
nodes = 8
intra = { bandwidth = "200 GB/s", latency = "5 us" }
inter = { bandwidth = "25 Gbit/s", latency = "20 us" }
[codec]
type = "dynamic"
encode = "200 GB/s"
decode = "400 GB/s"
overhead = "5 us"
)toml";

std::string preset_text(const std::string& name) {
  if (name == "alexnet-4gpu") return std::string(kAlexNetWorkload) + kAlexNet4;
  if (name == "alexnet-96gpu")
    return std::string(kAlexNetWorkload)
               .replace(std::string(kAlexNetWorkload).find("sub_batch = 128"), 15,
                        "sub_batch = 512") +
           kAlexNet96;
  if (name == "resnet50-dp") return kResNet50;
  if (name == "gpt2-dp") return kGpt2;
  std::string list;
  for (const auto& n : preset_names()) list += (list.empty() ? "" : ", ") + n;
  fail("preset", "unknown preset " + detail::quoted(name) + " (expected one of " + list + ")");
}

}  // namespace

std::vector<std::string> preset_names() {
  return {"alexnet-4gpu", "alexnet-96gpu", "resnet50-dp", "gpt2-dp"};
}

ScenarioParts preset(const std::string& name) {
  // TOML wants top-level keys before any table: move "gpus = N" to the front.
  std::string text = preset_text(name);
  const size_t at = text.find("\ngpus = ");
  if (at != std::string::npos) {
    const size_t end = text.find('\n', at + 1);
    const std::string line = text.substr(at + 1, end - at);
    text.erase(at + 1, end - at);
    text = line + text;
  }
  return parse_scenario(text, true, "preset " + name);
}

}  // namespace predictor
}  // namespace octet
