// vnfs TPIE adapter: the override of TPIE's tpie/file_accessor/file_accessor.h. With
// adapters/tpie/override before TPIE's own include directory, every TPIE file stream,
// serialization stream, compressed stream and block collection does its I/O through
// tpie::file_accessor::vnfs_accessor, i.e. vnfs::tpie::raw_file_accessor: files under a
// VNFS_MAP prefix live on vnfs, the others are local. Neither TPIE nor its applications
// change. Same include guard as the header it replaces, so only one of them is ever read.
#ifndef __tpie_file_accessor_file_accossor_h__
#define __tpie_file_accessor_file_accossor_h__

#include <tpie/file_accessor/stream_accessor.h>
#include <tpie/file_accessor/vnfs_accessor.h>

namespace tpie {
namespace file_accessor {
typedef vnfs_accessor raw_file_accessor;
typedef stream_accessor_base<vnfs_accessor> file_accessor;
}  // namespace file_accessor

typedef file_accessor::raw_file_accessor default_raw_file_accessor;
typedef file_accessor::stream_accessor<default_raw_file_accessor> default_file_accessor;
}  // namespace tpie

#endif
