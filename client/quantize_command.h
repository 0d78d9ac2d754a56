// `kiln quantize MODEL --calibration DIR [--eval DIR] -o OUT.onnx [--server ADDR]`: static
// post-training int8 quantization on this machine (compiler/quantize) or as a kilnd job: writes the
// QDQ model, optionally compiles it, and prints what the quantization costs in accuracy — for each
// output and each layer, the layer that loses most marked — so that it can be kept in float with
// --keep-float.
#ifndef KILN_CLIENT_QUANTIZE_COMMAND_H_
#define KILN_CLIENT_QUANTIZE_COMMAND_H_

#include <string>
#include <vector>

#include "client/remote_commands.h"

namespace kiln::client {

struct QuantizeFlags {
  std::string model;
  std::string calibration;  // a folder of .npy inputs
  std::string eval;         // held-out inputs ("" = report on the calibration inputs)
  std::string output;       // the QDQ .onnx model
  std::string artifact;     // "" or a .kiln file to compile the QDQ model into
  std::string target = "llvm";
  bool target_given = false;  // --target was given (through kilnd, else the device's or "llvm")
  std::string device;         // with --server: compile for this device's target
  std::string method = "minmax";
  double percentile = 99.99;
  std::vector<std::string> keep_float;
  std::string report;  // "" or a file for the report as JSON
  int threads = 1;
};

// In process, or with `remote`'s --server through kilnd (a quantize job: calibration in a
// kiln-worker, the same report, the QDQ model and artifact downloaded).
int QuantizeModel(const QuantizeFlags& flags, const RemoteFlags& remote);

}  // namespace kiln::client

#endif  // KILN_CLIENT_QUANTIZE_COMMAND_H_
