// porta runtime — graph IR helpers.
#include "runtime/graph.hpp"

#include <algorithm>

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

namespace porta {

void topological_sort(Graph& g) {
  size_t n = g.nodes.size();
  // producer of each value (validated unique by the importer)
  std::vector<int> producer(g.values.size(), -1);
  for (size_t i = 0; i < n; ++i)
    for (int v : g.nodes[i].outputs)
      if (v >= 0) producer[v] = static_cast<int>(i);
  std::vector<int> indegree(n, 0);
  std::vector<std::vector<int>> users(n);
  for (size_t i = 0; i < n; ++i)
    for (int v : g.nodes[i].inputs) {
      if (v < 0 || producer[v] < 0) continue;
      users[producer[v]].push_back(static_cast<int>(i));
      indegree[i]++;
    }
  std::vector<int> order, ready;
  for (size_t i = n; i-- > 0;)
    if (indegree[i] == 0) ready.push_back(static_cast<int>(i));
  // Keep the file's order where possible: take the lowest ready index first.
  while (!ready.empty()) {
    auto it = std::min_element(ready.begin(), ready.end());
    int i = *it;
    ready.erase(it);
    order.push_back(i);
    for (int u : users[i])
      if (--indegree[u] == 0) ready.push_back(u);
  }
  if (order.size() != n) {
    std::string cycle;
    int shown = 0;
    for (size_t i = 0; i < n && shown < 8; ++i)
      if (indegree[i] > 0) {
        cycle += str(shown ? ", " : "", "'", g.nodes[i].name, "' (", g.nodes[i].op->name, ")");
        ++shown;
      }
    throw InvalidModel(str("[onnx] the graph has a cycle through nodes ", cycle));
  }
  std::vector<Node> sorted;
  sorted.reserve(n);
  for (int i : order) sorted.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(sorted);
  for (auto& v : g.values) v.producer = -1;
  for (size_t i = 0; i < n; ++i)
    for (int v : g.nodes[i].outputs)
      if (v >= 0) g.values[v].producer = static_cast<int>(i);
}

}  // namespace porta
