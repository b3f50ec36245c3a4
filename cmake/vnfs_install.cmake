# Installation and export of the vnfs SDK (included at the end of the top-level CMakeLists.txt).
#
#   cmake --install <build> --prefix P
#
# gives P/include/vnfs/*.hpp (the public API) and P/include/vnfs/nfs4/status.hpp,
# P/lib/libvnfs_{client,transport,protocol}.a, P/lib/libvnfs_server{,_fs}.a, P/lib/cmake/vnfs/
# (find_package(vnfs) -> targets vnfs::client and vnfs::server, the embedded vnfsd),
# P/lib/pkgconfig/{vnfs,vnfs-server}.pc and P/bin/{vnfsd,vnfs,vnfs-demo}.
# Both the CMake package and vnfs.pc locate the prefix relative to their own file, so an
# install tree can be moved (and `--prefix` at install time needs no re-configure).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The libraries a consumer links: vnfs_client and every library of this project it links,
# found from the targets' link properties (install(EXPORT) refuses a target that links an
# unexported one), ordered for static linking: each before the ones it uses.
function(_vnfs_visit target)
  get_property(visited GLOBAL PROPERTY _VNFS_VISITED)
  if(target IN_LIST visited)
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY _VNFS_VISITED ${target})
  get_target_property(deps ${target} LINK_LIBRARIES)
  get_target_property(interface_deps ${target} INTERFACE_LINK_LIBRARIES)
  foreach(dep IN LISTS deps interface_deps)
    if(dep MATCHES "^\\$<LINK_ONLY:(.*)>$")
      set(dep "${CMAKE_MATCH_1}")
    endif()
    if(NOT TARGET "${dep}")
      continue()
    endif()
    get_target_property(aliased ${dep} ALIASED_TARGET)
    if(aliased)
      set(dep ${aliased})
    endif()
    get_target_property(imported ${dep} IMPORTED)
    if(imported)
      set_property(GLOBAL APPEND PROPERTY _VNFS_IMPORTED_DEPS ${dep})
    else()
      _vnfs_visit(${dep})
    endif()
  endforeach()
  set_property(GLOBAL APPEND PROPERTY _VNFS_POSTORDER ${target})
endfunction()
# The client's libraries (vnfs.pc), then those vnfs_server adds to them (vnfs-server.pc).
function(_vnfs_collect root libraries_var deps_var)
  set_property(GLOBAL PROPERTY _VNFS_POSTORDER "")
  set_property(GLOBAL PROPERTY _VNFS_IMPORTED_DEPS "")
  _vnfs_visit(${root})
  get_property(libraries GLOBAL PROPERTY _VNFS_POSTORDER)
  list(REVERSE libraries)
  get_property(deps GLOBAL PROPERTY _VNFS_IMPORTED_DEPS)
  list(REMOVE_DUPLICATES deps)
  set(${libraries_var} ${libraries} PARENT_SCOPE)
  set(${deps_var} ${deps} PARENT_SCOPE)
endfunction()
_vnfs_collect(vnfs_client VNFS_CLIENT_LIBRARIES VNFS_CLIENT_DEPS)
_vnfs_collect(vnfs_server VNFS_SERVER_LIBRARIES VNFS_SERVER_DEPS)
set(VNFS_EXPORTED_LIBRARIES ${VNFS_CLIENT_LIBRARIES} ${VNFS_SERVER_LIBRARIES})

# Exported as vnfs::<name without "vnfs_">; in-tree code (examples) may use the same names.
foreach(lib IN LISTS VNFS_EXPORTED_LIBRARIES)
  string(REGEX REPLACE "^vnfs_" "" name ${lib})
  set_target_properties(${lib} PROPERTIES EXPORT_NAME ${name})
  if(NOT TARGET vnfs::${name})
    add_library(vnfs::${name} ALIAS ${lib})
  endif()
endforeach()

# What imported dependencies need in vnfsConfig.cmake (find_dependency, appended to
# VNFS_CONFIG_DEPENDENCIES) and in a .pc file (Requires, returned in pc_requires_var).
set(VNFS_CONFIG_DEPENDENCIES "find_dependency(Threads)\nfind_dependency(Boost 1.74)")
function(_vnfs_dependency_rules deps pc_requires_var)
  set(config "${VNFS_CONFIG_DEPENDENCIES}")
  set(requires "")
  foreach(dep IN LISTS deps)
    if(dep MATCHES "^OpenSSL::(Crypto|SSL)$")
      set(component ${CMAKE_MATCH_1})
      if(NOT config MATCHES "OpenSSL")
        string(APPEND config "\nfind_dependency(OpenSSL)")
      endif()
      if(component STREQUAL "SSL")
        list(APPEND requires libssl)
      endif()
      list(APPEND requires libcrypto)
    elseif(dep STREQUAL "PkgConfig::TIRPC")
      if(NOT config MATCHES "TIRPC")
        string(APPEND config
          "\nfind_dependency(PkgConfig)\npkg_check_modules(TIRPC REQUIRED IMPORTED_TARGET libtirpc)")
      endif()
      list(APPEND requires libtirpc)
    elseif(dep MATCHES "^PkgConfig::(IBVERBS|RDMACM)$")
      # RPC-over-RDMA's verbs provider (vnfs_transport_rdma).
      set(prefix ${CMAKE_MATCH_1})
      if(prefix STREQUAL "IBVERBS")
        set(module libibverbs)
      else()
        set(module librdmacm)
      endif()
      if(NOT config MATCHES "${prefix}")
        string(APPEND config
          "\nfind_dependency(PkgConfig)\npkg_check_modules(${prefix} REQUIRED IMPORTED_TARGET ${module})")
      endif()
      list(APPEND requires ${module})
    elseif(dep STREQUAL "PkgConfig::ISAL")
      # vnfsd's transaction journal checksums its records with ISA-L's CRC-32.
      if(NOT config MATCHES "ISAL")
        string(APPEND config
          "\nfind_dependency(PkgConfig)\npkg_check_modules(ISAL REQUIRED IMPORTED_TARGET libisal)")
      endif()
      list(APPEND requires libisal)
    elseif(NOT dep MATCHES "^(Threads::Threads|Boost::headers|Boost::boost)$")
      message(WARNING "vnfs packaging: ${dep}, linked by the installed libraries, is not found by "
                      "vnfsConfig.cmake nor required by a .pc file: add it in cmake/vnfs_install.cmake")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES requires)
  string(REPLACE ";" ", " requires "${requires}")
  set(VNFS_CONFIG_DEPENDENCIES "${config}" PARENT_SCOPE)
  set(${pc_requires_var} "${requires}" PARENT_SCOPE)
endfunction()
_vnfs_dependency_rules("${VNFS_CLIENT_DEPS}" VNFS_PC_REQUIRES)
_vnfs_dependency_rules("${VNFS_SERVER_DEPS}" VNFS_SERVER_PC_REQUIRES)
set(VNFS_SERVER_PC_REQUIRES_SEP "")
if(VNFS_SERVER_PC_REQUIRES)
  set(VNFS_SERVER_PC_REQUIRES_SEP ", ")
endif()

install(TARGETS ${VNFS_EXPORTED_LIBRARIES}
  EXPORT vnfs-targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS vnfsd vnfs vnfs-demo RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Public headers: the API (include/vnfs/*.hpp) and, of the protocol layers below it, only what
# the API sends users to: nfs4/status.hpp (error.hpp: NFS4ERR_* compare with nfsstat4). The
# other xdr/rpc/nfs4/transport headers are the libraries' own and stay in the source tree.
# scripts/check_layers.py holds public code to the same set (PUBLIC_NESTED): change both.
file(GLOB VNFS_API_HEADERS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/vnfs/*.hpp)
install(FILES ${VNFS_API_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/vnfs)
install(FILES ${PROJECT_SOURCE_DIR}/include/vnfs/nfs4/status.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/vnfs/nfs4)

set(VNFS_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/vnfs)
install(EXPORT vnfs-targets NAMESPACE vnfs:: DESTINATION ${VNFS_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/vnfsConfig.cmake.in
  ${PROJECT_BINARY_DIR}/vnfsConfig.cmake
  INSTALL_DESTINATION ${VNFS_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/vnfsConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/vnfsConfig.cmake ${PROJECT_BINARY_DIR}/vnfsConfigVersion.cmake
  DESTINATION ${VNFS_CMAKE_DIR})

# vnfs.pc. The libraries are static, so their dependencies go into Libs/Requires (not the
# .private fields): a consumer links them whether or not it passes --static.
set(VNFS_PC_LIBS "")
foreach(lib IN LISTS VNFS_CLIENT_LIBRARIES)
  string(APPEND VNFS_PC_LIBS " -l${lib}")
endforeach()
set(VNFS_SERVER_PC_LIBS "")
foreach(lib IN LISTS VNFS_SERVER_LIBRARIES)
  string(APPEND VNFS_SERVER_PC_LIBS " -l${lib}")
endforeach()
file(RELATIVE_PATH VNFS_PC_PREFIX_FROM_PCDIR
  /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" VNFS_PC_PREFIX_FROM_PCDIR "${VNFS_PC_PREFIX_FROM_PCDIR}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/vnfs.pc.in ${PROJECT_BINARY_DIR}/vnfs.pc @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/vnfs-server.pc.in ${PROJECT_BINARY_DIR}/vnfs-server.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/vnfs.pc ${PROJECT_BINARY_DIR}/vnfs-server.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# ---- The Berkeley DB adapter (adapters/bdb): vnfs::bdb in the same export set, its header,
# vnfs-bdb.pc and the drop-in libvnfs_bdb_preload.so. Consumers link their Berkeley DB
# library themselves (-ldb-5.3 or -ldb_cxx-5.3; see vnfs/bdb/attach.hpp).
if(TARGET vnfs_bdb)
  set_target_properties(vnfs_bdb PROPERTIES EXPORT_NAME bdb)
  add_library(vnfs::bdb ALIAS vnfs_bdb)
  install(TARGETS vnfs_bdb EXPORT vnfs-targets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(TARGETS vnfs_bdb_preload LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/adapters/bdb/include/vnfs
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.hpp")
  configure_file(${PROJECT_SOURCE_DIR}/adapters/bdb/vnfs-bdb.pc.in ${PROJECT_BINARY_DIR}/vnfs-bdb.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/vnfs-bdb.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()

# ---- The TPIE adapter (adapters/tpie): vnfs::tpie in the same export set, its headers
# (vnfs/tpie/*.hpp), vnfs-tpie.pc, and the override headers in include/vnfs/tpie/override:
# put that directory before TPIE's own include directory when building TPIE and its
# programs, and link vnfs_tpie, to make vnfs::tpie::raw_file_accessor TPIE's default.
if(TARGET vnfs_tpie)
  set_target_properties(vnfs_tpie PROPERTIES EXPORT_NAME tpie)
  add_library(vnfs::tpie ALIAS vnfs_tpie)
  install(TARGETS vnfs_tpie EXPORT vnfs-targets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/adapters/tpie/include/vnfs
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.hpp")
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/adapters/tpie/override/
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/vnfs/tpie/override)
  configure_file(${PROJECT_SOURCE_DIR}/adapters/tpie/vnfs-tpie.pc.in ${PROJECT_BINARY_DIR}/vnfs-tpie.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/vnfs-tpie.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()
