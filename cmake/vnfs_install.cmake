# Installation and export of the vnfs SDK (included at the end of the top-level CMakeLists.txt).
#
#   cmake --install <build> --prefix P
#
# gives P/include/vnfs/** (public API and the protocol/transport headers it rests on),
# P/lib/libvnfs_{client,transport,protocol}.a, P/lib/cmake/vnfs/ (find_package(vnfs) ->
# target vnfs::client), P/lib/pkgconfig/vnfs.pc and P/bin/{vnfsd,vnfs,vnfs-demo}.
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
_vnfs_visit(vnfs_client)
get_property(VNFS_EXPORTED_LIBRARIES GLOBAL PROPERTY _VNFS_POSTORDER)
list(REVERSE VNFS_EXPORTED_LIBRARIES)
get_property(VNFS_IMPORTED_DEPS GLOBAL PROPERTY _VNFS_IMPORTED_DEPS)
list(REMOVE_DUPLICATES VNFS_IMPORTED_DEPS)

# Exported as vnfs::<name without "vnfs_">; in-tree code (examples) may use the same names.
foreach(lib IN LISTS VNFS_EXPORTED_LIBRARIES)
  string(REGEX REPLACE "^vnfs_" "" name ${lib})
  set_target_properties(${lib} PROPERTIES EXPORT_NAME ${name})
  if(NOT TARGET vnfs::${name})
    add_library(vnfs::${name} ALIAS ${lib})
  endif()
endforeach()

# What the imported dependencies need in vnfsConfig.cmake (find_dependency) and in vnfs.pc
# (Requires). Threads and Boost are always there: the public headers use Asio.
set(VNFS_CONFIG_DEPENDENCIES "find_dependency(Threads)\nfind_dependency(Boost 1.74)")
set(VNFS_PC_REQUIRES "")
foreach(dep IN LISTS VNFS_IMPORTED_DEPS)
  if(dep MATCHES "^OpenSSL::(Crypto|SSL)$")
    if(NOT VNFS_CONFIG_DEPENDENCIES MATCHES "OpenSSL")
      string(APPEND VNFS_CONFIG_DEPENDENCIES "\nfind_dependency(OpenSSL)")
    endif()
    if(CMAKE_MATCH_1 STREQUAL "SSL")
      list(APPEND VNFS_PC_REQUIRES libssl)
    endif()
    list(APPEND VNFS_PC_REQUIRES libcrypto)
  elseif(dep STREQUAL "PkgConfig::TIRPC")
    string(APPEND VNFS_CONFIG_DEPENDENCIES
      "\nfind_dependency(PkgConfig)\npkg_check_modules(TIRPC REQUIRED IMPORTED_TARGET libtirpc)")
    list(APPEND VNFS_PC_REQUIRES libtirpc)
  elseif(dep MATCHES "^PkgConfig::(IBVERBS|RDMACM)$")
    # RPC-over-RDMA's verbs provider (vnfs_transport_rdma).
    if(CMAKE_MATCH_1 STREQUAL "IBVERBS")
      set(_vnfs_pc_module libibverbs)
    else()
      set(_vnfs_pc_module librdmacm)
    endif()
    string(APPEND VNFS_CONFIG_DEPENDENCIES
      "\nfind_dependency(PkgConfig)\npkg_check_modules(${CMAKE_MATCH_1} REQUIRED IMPORTED_TARGET ${_vnfs_pc_module})")
    list(APPEND VNFS_PC_REQUIRES ${_vnfs_pc_module})
  elseif(NOT dep MATCHES "^(Threads::Threads|Boost::headers|Boost::boost)$")
    message(WARNING "vnfs packaging: ${dep}, linked by the installed libraries, is not found by "
                    "vnfsConfig.cmake nor required by vnfs.pc: add it in cmake/vnfs_install.cmake")
  endif()
endforeach()
list(REMOVE_DUPLICATES VNFS_PC_REQUIRES)
string(REPLACE ";" ", " VNFS_PC_REQUIRES "${VNFS_PC_REQUIRES}")

install(TARGETS ${VNFS_EXPORTED_LIBRARIES}
  EXPORT vnfs-targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS vnfsd vnfs vnfs-demo RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Public headers: the whole include/vnfs tree (the API headers and the xdr/rpc/nfs4/transport
# headers they and advanced users include). Test-support headers live elsewhere.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/vnfs
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.hpp")

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
foreach(lib IN LISTS VNFS_EXPORTED_LIBRARIES)
  string(APPEND VNFS_PC_LIBS " -l${lib}")
endforeach()
file(RELATIVE_PATH VNFS_PC_PREFIX_FROM_PCDIR
  /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" VNFS_PC_PREFIX_FROM_PCDIR "${VNFS_PC_PREFIX_FROM_PCDIR}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/vnfs.pc.in ${PROJECT_BINARY_DIR}/vnfs.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/vnfs.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

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
