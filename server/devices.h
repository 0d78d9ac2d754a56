// Choosing a device and the code for it: a client names a device by key or by attributes
// ("arch=aarch64,features~neon,min_cores=4"), and a compile for a device gets the target its
// agents registered (triple and CPU features). Pure functions over kiln.v1.Device; the job
// manager holds the devices.
#ifndef KILN_SERVER_DEVICES_H_
#define KILN_SERVER_DEVICES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/kiln/v1/jobs.pb.h"

namespace kiln::server {

struct DeviceSelector {
  std::string text;  // as written, for messages
  std::string key, arch, triple;
  std::vector<std::string> features;  // Linux or LLVM names
  int min_cores = 0;
  double min_memory_gb = 0;
  std::optional<bool> emulated;
};

// Parses "arch=aarch64,features~neon,min_cores=4" (the grammar in jobs.proto); InvalidArgument
// names the term that is wrong.
absl::StatusOr<DeviceSelector> ParseDeviceSelector(absl::string_view text);

bool Matches(const DeviceSelector& selector, const v1::Device& device);

// The device `selector` picks from `devices`: among those that match, one with agents connected,
// then the shortest queue. NotFound lists what there is when nothing matches.
absl::StatusOr<v1::Device> SelectDevice(const DeviceSelector& selector,
                                        const std::vector<v1::Device>& devices);

// The target to compile for a device: "llvm" (this server's CPU, all its features) when the
// device is this machine's CPU model, natively; otherwise the device's triple with the LLVM names
// of the CPU features it registered ("llvm -mtriple=aarch64-linux-gnu -mattr=+neon,+dotprod").
std::string TargetForDevice(const v1::DeviceAttributes& device,
                            const v1::DeviceAttributes& server_host);

// One line per device for messages and `kiln devices`: "board: aarch64-unknown-linux-gnu, 2
// cores, 3.8 GiB, asimd asimddp (emulated)".
std::string DescribeDevice(const v1::Device& device);

}  // namespace kiln::server

#endif  // KILN_SERVER_DEVICES_H_
