// porta runtime — the scan behind onnx_source.hpp: protobuf's wire format, followed only as
// deep as ModelProto -> GraphProto -> TensorProto. Fields the scan does not take apart are
// kept byte for byte, so protobuf still decides what they mean and whether they are valid.
#include "runtime/onnx_source.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "porta/error.hpp"
#include "porta/util.hpp"

namespace porta::detail {

ByteSource::ByteSource(const std::string& path) : name_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO must not block the open
  if (fd_ < 0) throw InvalidModel(str("[onnx] cannot open '", path, "': ", std::strerror(errno)));
  struct stat st;
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw InvalidModel(str("[onnx] '", path, "' is not a regular file"));
  }
  size_ = static_cast<uint64_t>(st.st_size);
  // Advice only: the weights are read once, front to back, after a scan of the framing.
  ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
}

ByteSource::~ByteSource() {
  if (fd_ >= 0) ::close(fd_);
}

void ByteSource::read(uint64_t offset, void* dst, uint64_t n) const {
  if (offset > size_ || n > size_ - offset)
    throw InvalidModel(str("[onnx] ", n, " bytes from byte ", offset, " are past the end of the ", size_,
                           "-byte model"));
  if (data_) {
    if (n) std::memcpy(dst, data_ + offset, n);
    return;
  }
  auto* out = static_cast<char*>(dst);
  while (n > 0) {
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(n, uint64_t{1} << 30));
    ssize_t got = ::pread(fd_, out, chunk, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      throw InvalidModel(str("[onnx] reading '", name_, "' failed at byte ", offset, " of ", size_, ": ",
                             got == 0 ? "the file became shorter while it was read" : std::strerror(errno)));
    out += got;
    offset += static_cast<uint64_t>(got);
    n -= static_cast<uint64_t>(got);
  }
}

namespace {

// Field numbers and the wire type the scan takes apart (onnx.proto).
constexpr uint32_t kModelGraph = 7, kGraphInitializer = 5, kTensorRawData = 9;
constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

// Reads a source a window at a time, so that scanning a file's framing costs a few large
// reads rather than one per field.
class Reader {
 public:
  explicit Reader(const ByteSource& source) : source_(source) {}
  const ByteSource& source() const { return source_; }
  // The byte at `offset` (below the source's size).
  uint8_t byte(uint64_t offset) {
    if (const uint8_t* m = source_.memory()) return m[offset];
    if (offset < start_ || offset - start_ >= length_) {
      if (!window_) window_.reset(new uint8_t[kWindow]);
      length_ = std::min<uint64_t>(kWindow, source_.size() - offset);
      source_.read(offset, window_.get(), length_);
      start_ = offset;
    }
    return window_[offset - start_];
  }

 private:
  static constexpr uint64_t kWindow = 64 << 10;
  const ByteSource& source_;
  std::unique_ptr<uint8_t[]> window_;
  uint64_t start_ = 0, length_ = 0;
};

// A varint of at most `max_bytes` at `pos`, before `end`; advances `pos`.
bool read_varint(Reader& r, uint64_t& pos, uint64_t end, int max_bytes, uint64_t& value) {
  value = 0;
  for (int i = 0; i < max_bytes && pos < end; ++i) {
    uint8_t b = r.byte(pos++);
    value |= uint64_t{b & 0x7fu} << (7 * i);
    if (!(b & 0x80)) return true;
  }
  return false;
}

void put_varint(std::string& out, uint64_t v) {
  for (; v >= 0x80; v >>= 7) out.push_back(static_cast<char>(v | 0x80));
  out.push_back(static_cast<char>(v));
}

struct Field {
  uint32_t number = 0;
  int wire = 0;
  uint64_t start = 0, payload = 0, end = 0;  // payload: a length-delimited field's first byte
};

// The field at `pos`, which must end by `end`. False where protobuf's own parser is to judge
// the bytes: groups (which the scan does not follow) and anything malformed. The limits are
// protobuf's: a tag of at most 5 bytes and 32 bits, field number 0 invalid, a length of at most
// 5 bytes that fits in what remains.
bool next_field(Reader& r, uint64_t pos, uint64_t end, Field& f) {
  f.start = pos;
  uint64_t tag = 0, n = 0;
  if (!read_varint(r, pos, end, 5, tag) || tag > 0xffffffffu || (tag >> 3) == 0) return false;
  f.number = static_cast<uint32_t>(tag >> 3);
  f.wire = static_cast<int>(tag & 7);
  switch (f.wire) {
    case kVarint:
      if (!read_varint(r, pos, end, 10, n)) return false;
      break;
    case kFixed64:
    case kFixed32:
      n = f.wire == kFixed64 ? 8 : 4;
      if (end - pos < n) return false;
      pos += n;
      break;
    case kLengthDelimited:
      if (!read_varint(r, pos, end, 5, n) || n > end - pos) return false;
      f.payload = pos;
      pos += n;
      break;
    default: return false;
  }
  f.end = pos;
  return true;
}

// The stripped message as a list of pieces, each a re-encoded field header followed by a range
// of the source; written out once its size is known.
class Layout {
 public:
  // Keeps source bytes [from, to) next.
  void keep(uint64_t from, uint64_t to) {
    if (from == to) return;
    size_ += to - from;
    if (!pieces_.empty() && pieces_.back().from == pieces_.back().to) {
      pieces_.back().from = from;
      pieces_.back().to = to;
    } else if (!pieces_.empty() && pieces_.back().to == from) {
      pieces_.back().to = to;
    } else {
      pieces_.push_back({{}, from, to, 0});
    }
  }
  // Starts a length-delimited field whose contents follow; close() writes its header.
  size_t open() {
    pieces_.push_back({{}, 0, 0, size_});
    return pieces_.size() - 1;
  }
  void close(size_t piece, uint32_t number) {
    Piece& p = pieces_[piece];
    put_varint(p.header, uint64_t{number} << 3 | kLengthDelimited);
    put_varint(p.header, size_ - p.size_before);
    size_ += p.header.size();
  }
  std::string write(const ByteSource& source) const {
    std::string out(size_, '\0');
    char* at = out.data();
    for (const Piece& p : pieces_) {
      std::memcpy(at, p.header.data(), p.header.size());
      at += p.header.size();
      source.read(p.from, at, p.to - p.from);
      at += p.to - p.from;
    }
    return out;
  }

 private:
  struct Piece {
    std::string header;
    uint64_t from, to;
    uint64_t size_before;  // the layout's size when an opened field began
  };
  std::vector<Piece> pieces_;
  uint64_t size_ = 0;
};

// A TensorProto's fields [begin, end) without raw_data (protobuf keeps the last of repeated
// occurrences of a singular field, and so does `raw`).
bool lay_out_tensor(Reader& r, uint64_t begin, uint64_t end, Layout& out, std::optional<RawData>& raw) {
  for (uint64_t pos = begin; pos < end;) {
    Field f;
    if (!next_field(r, pos, end, f)) return false;
    if (f.number == kTensorRawData && f.wire == kLengthDelimited)
      raw = RawData{&r.source(), f.payload, f.end - f.payload};
    else
      out.keep(f.start, f.end);
    pos = f.end;
  }
  return true;
}

bool lay_out_graph(Reader& r, uint64_t begin, uint64_t end, Layout& out, std::vector<std::optional<RawData>>& raw) {
  for (uint64_t pos = begin; pos < end;) {
    Field f;
    if (!next_field(r, pos, end, f)) return false;
    if (f.number == kGraphInitializer && f.wire == kLengthDelimited) {
      size_t piece = out.open();
      raw.emplace_back();
      if (!lay_out_tensor(r, f.payload, f.end, out, raw.back())) return false;
      out.close(piece, kGraphInitializer);
    } else {
      out.keep(f.start, f.end);
    }
    pos = f.end;
  }
  return true;
}

}  // namespace

std::optional<StrippedMessage> strip_model_raw_data(const ByteSource& source) {
  Reader r(source);
  Layout out;
  StrippedMessage m;
  // A graph given in several pieces is one graph to protobuf (their fields merge, initializers
  // in order of appearance), so the pieces' initializers are numbered on in `raw`.
  for (uint64_t pos = 0; pos < source.size();) {
    Field f;
    if (!next_field(r, pos, source.size(), f)) return std::nullopt;
    if (f.number == kModelGraph && f.wire == kLengthDelimited) {
      size_t piece = out.open();
      if (!lay_out_graph(r, f.payload, f.end, out, m.raw)) return std::nullopt;
      out.close(piece, kModelGraph);
    } else {
      out.keep(f.start, f.end);
    }
    pos = f.end;
  }
  m.bytes = out.write(source);
  return m;
}

std::optional<StrippedMessage> strip_tensor_raw_data(const ByteSource& source) {
  Reader r(source);
  Layout out;
  StrippedMessage m;
  m.raw.emplace_back();
  if (!lay_out_tensor(r, 0, source.size(), out, m.raw.back())) return std::nullopt;
  m.bytes = out.write(source);
  return m;
}

}  // namespace porta::detail
