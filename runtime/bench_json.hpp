// porta runtime — a small JSON value, reader and string escaper for `porta bench` files
// (the ceilings cache, --json output) and the tests that check them. Not a general-purpose
// JSON library: numbers are doubles, objects keep their key order.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace porta::bench {

struct Json {
  enum class Kind { null, boolean, number, string, array, object };
  Kind kind = Kind::null;
  bool boolean = false;
  double number = 0;
  std::string text;
  std::vector<Json> items;                           ///< array elements
  std::vector<std::pair<std::string, Json>> fields;  ///< object members, in file order

  // Defined in bench_json.cpp, where Json is complete: clang with libstdc++ 12 in C++20
  // rejects the implicit ones, which instantiate ~vector<pair<string, Json>> inside the class.
  Json();
  Json(const Json&);
  Json(Json&&) noexcept;
  Json& operator=(const Json&);
  Json& operator=(Json&&) noexcept;
  ~Json();

  bool is(Kind k) const { return kind == k; }
  /// Member `key` of an object, or nullptr (also when this is not an object).
  const Json* find(std::string_view key) const;
  /// Member `key`; throws InvalidArgument naming the key when absent.
  const Json& at(std::string_view key) const;

  /// Parses a whole document; throws InvalidArgument with the byte offset of the problem.
  static Json parse(std::string_view text);
};

/// `text` as a JSON string literal, quotes included.
std::string json_quote(std::string_view text);
/// A finite number in JSON form ("null" for NaN or infinity, which JSON cannot hold).
std::string json_number(double value);

}  // namespace porta::bench
