// porta — command-line program (placeholder until the CLI lands).
#include <iostream>

#include "porta/porta.hpp"

int main() {
  std::cout << "porta " << porta::version() << "\n";
  return 0;
}
