// porta runtime — graph IR helpers.
#include "runtime/graph.hpp"

#include "porta/error.hpp"
#include "porta/util.hpp"

namespace porta {

int Graph::add_value(std::string name) {
  int id = static_cast<int>(values.size());
  Value v;
  v.name = name;
  values.push_back(std::move(v));
  if (!name.empty()) by_name[name] = id;
  return id;
}

int Graph::find(const std::string& name) const {
  auto it = by_name.find(name);
  return it == by_name.end() ? -1 : it->second;
}

}  // namespace porta
