// vnfs TPIE adapter: how a file will be read, as TPIE's set_cache_hint says it. C++17.
#pragma once

namespace vnfs::tpie {

/// The access pattern announced for a file (tpie::cache_hint, same order and meaning).
///  - normal:     read-ahead starts once a read continues where the previous one ended
///  - sequential: read-ahead from the first read (TPIE's default for streams)
///  - random:     no read-ahead; every read fetches exactly what it asks for
enum class cache_hint { normal, sequential, random };

}  // namespace vnfs::tpie
