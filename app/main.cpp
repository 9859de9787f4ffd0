// ingestd's command line.
#include <cstdio>
int main() {
  std::puts("ingestd");
  return 0;
}
