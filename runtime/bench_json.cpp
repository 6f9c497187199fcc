// porta runtime — the small JSON reader and writer helpers of `porta bench`.
#include "runtime/bench_json.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "porta/error.hpp"
#include "porta/util.hpp"

namespace porta::bench {

Json::Json() = default;
Json::Json(const Json&) = default;
Json::Json(Json&&) noexcept = default;
Json& Json::operator=(const Json&) = default;
Json& Json::operator=(Json&&) noexcept = default;
Json::~Json() = default;

const Json* Json::find(std::string_view key) const {
  for (auto& [k, v] : fields)
    if (k == key) return &v;
  return nullptr;
}

const Json& Json::at(std::string_view key) const {
  const Json* v = find(key);
  if (!v) throw InvalidArgument(str("[json] expected a member '", key, "', found none"));
  return *v;
}

namespace {

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}

  Json document() {
    Json v = value(0);
    skip_space();
    if (pos_ != s_.size()) fail("end of document");
    return v;
  }

 private:
  [[noreturn]] void fail(std::string_view expected) const {
    std::string got = pos_ < s_.size() ? str("'", s_[pos_], "'") : std::string("end of input");
    throw InvalidArgument(str("[json] expected ", expected, " at byte ", pos_, ", got ", got));
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool eat(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) return ++pos_, true;
    return false;
  }
  bool word(std::string_view w) {
    if (s_.substr(pos_, w.size()) == w) return pos_ += w.size(), true;
    return false;
  }

  Json value(int depth) {
    if (depth > 64) fail("nesting of at most 64 levels");
    skip_space();
    Json v;
    if (pos_ >= s_.size()) fail("a value");
    char c = s_[pos_];
    if (c == '{') {
      ++pos_;
      v.kind = Json::Kind::object;
      if (eat('}')) return v;
      do {
        skip_space();
        if (pos_ >= s_.size() || s_[pos_] != '"') fail("a member name");
        std::string key = string();
        if (!eat(':')) fail("':'");
        v.fields.emplace_back(std::move(key), value(depth + 1));
      } while (eat(','));
      if (!eat('}')) fail("',' or '}'");
    } else if (c == '[') {
      ++pos_;
      v.kind = Json::Kind::array;
      if (eat(']')) return v;
      do v.items.push_back(value(depth + 1));
      while (eat(','));
      if (!eat(']')) fail("',' or ']'");
    } else if (c == '"') {
      v.kind = Json::Kind::string;
      v.text = string();
    } else if (word("true")) {
      v.kind = Json::Kind::boolean, v.boolean = true;
    } else if (word("false")) {
      v.kind = Json::Kind::boolean;
    } else if (word("null")) {
    } else {
      const char* begin = s_.data() + pos_;
      char* end = nullptr;
      std::string copy(begin, std::min<size_t>(s_.size() - pos_, 64));
      v.number = std::strtod(copy.c_str(), &end);
      if (end == copy.c_str()) fail("a value");
      v.kind = Json::Kind::number;
      pos_ += static_cast<size_t>(end - copy.c_str());
    }
    return v;
  }

  std::string string() {
    ++pos_;  // opening quote
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail("an escape");
      char e = s_[pos_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          if (pos_ + 4 > s_.size()) fail("four hex digits");
          unsigned code = static_cast<unsigned>(std::strtoul(std::string(s_.substr(pos_, 4)).c_str(), nullptr, 16));
          pos_ += 4;
          // Only what json_quote writes (control characters) needs to round-trip exactly.
          if (code < 0x80) out += static_cast<char>(code);
          else if (code < 0x800) out += static_cast<char>(0xC0 | (code >> 6)), out += static_cast<char>(0x80 | (code & 0x3F));
          else out += static_cast<char>(0xE0 | (code >> 12)), out += static_cast<char>(0x80 | ((code >> 6) & 0x3F)),
               out += static_cast<char>(0x80 | (code & 0x3F));
          break;
        }
        default: out += e;  // \" \\ \/
      }
    }
    if (pos_ >= s_.size()) fail("closing '\"'");
    ++pos_;
    return out;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

Json Json::parse(std::string_view text) { return Reader(text).document(); }

std::string json_quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\', out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.12g", value);
  return buf;
}

}  // namespace porta::bench
