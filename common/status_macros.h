// Status macros shared by every shardpack library (internal: not installed).
//
// Debian 12's Abseil (20220623) has no status macros, so we keep two small
// ones here, prefixed so they cannot meet a user's own.
#ifndef SHARDPACK_COMMON_STATUS_MACROS_H_
#define SHARDPACK_COMMON_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define SP_STATUS_CONCAT_INNER_(a, b) a##b
#define SP_STATUS_CONCAT_(a, b) SP_STATUS_CONCAT_INNER_(a, b)

// Evaluates `expr` (an absl::Status) and returns it from the enclosing
// function when it is not OK.
#define SP_RETURN_IF_ERROR(expr)                  \
  do {                                            \
    ::absl::Status sp_status_ = (expr);           \
    if (!sp_status_.ok()) return sp_status_;      \
  } while (0)

// `SP_ASSIGN_OR_RETURN(auto x, MakeX());` evaluates an absl::StatusOr<T>,
// returns its status when it is not OK, and otherwise moves the value into
// the declaration on the left.
#define SP_ASSIGN_OR_RETURN(lhs, expr) \
  SP_ASSIGN_OR_RETURN_IMPL_(SP_STATUS_CONCAT_(sp_statusor_, __LINE__), lhs, expr)
#define SP_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return std::move(tmp).status();  \
  lhs = *std::move(tmp)

#endif  // SHARDPACK_COMMON_STATUS_MACROS_H_
