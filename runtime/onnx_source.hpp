// porta runtime — reading a serialized ONNX message so that each tensor's raw_data is copied
// once, from the file (or the caller's buffer) straight into the tensor that keeps it.
//
// protobuf would copy every raw_data into a string of the parsed message, which import then
// copied into a tensor: with the whole file read first, a model's weights were in memory three
// times while it loaded. Here a scan of the protobuf framing re-encodes the message without the
// raw_data of the tensors import converts (ModelProto.graph.initializer, or a TensorProto file
// itself), remembering where each lies; protobuf parses the rest, and import reads each raw_data
// into its tensor's storage (tensor_from_proto's `raw`).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace porta::detail {

/// The bytes of a serialized message: memory the caller keeps alive, or a file read with pread.
/// A file is never mapped: one that shrinks while it loads gives InvalidModel, not SIGBUS.
class ByteSource {
 public:
  /// `size` bytes at `data`.
  ByteSource(const void* data, uint64_t size) : data_(static_cast<const uint8_t*>(data)), size_(size) {}
  /// The regular file at `path`, open until this goes, of the size it has now; throws
  /// InvalidModel when it cannot be opened or is not a regular file.
  explicit ByteSource(const std::string& path);
  ~ByteSource();
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  uint64_t size() const { return size_; }
  /// The bytes when they are in memory, else nullptr.
  const uint8_t* memory() const { return data_; }
  /// Copies bytes [offset, offset + n) to `dst`; throws InvalidModel when they are past the
  /// source's size or the file ends before them.
  void read(uint64_t offset, void* dst, uint64_t n) const;

 private:
  const uint8_t* data_ = nullptr;
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string name_;
};

/// Where one raw_data field's bytes lie in a source.
struct RawData {
  const ByteSource* source = nullptr;
  uint64_t offset = 0, size = 0;
};

/// A message re-encoded without the raw_data of its tensors, and where each was.
struct StrippedMessage {
  std::string bytes;                       ///< for protobuf to parse
  std::vector<std::optional<RawData>> raw; ///< per tensor left without raw_data, in order
};

/// A serialized ModelProto without its graph initializers' raw_data; `raw` has one entry per
/// initializer in the order protobuf lists them (std::nullopt: that one had no raw_data).
/// std::nullopt when the scan does not follow the framing (groups, malformed bytes): then
/// protobuf parses the whole message, and its verdict stands.
std::optional<StrippedMessage> strip_model_raw_data(const ByteSource& source);
/// The same for a serialized TensorProto: `raw` has one entry, the tensor's own.
std::optional<StrippedMessage> strip_tensor_raw_data(const ByteSource& source);

}  // namespace porta::detail
