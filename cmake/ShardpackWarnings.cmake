# Warning flags for our own targets. Third-party headers come in as SYSTEM
# includes, so they do not add noise here.
add_library(shardpack_warnings INTERFACE)
target_compile_options(shardpack_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align
  -Wimplicit-fallthrough -Wformat=2 -Wundef
  $<$<BOOL:${SHARDPACK_WERROR}>:-Werror>)
