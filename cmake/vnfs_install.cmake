# Installation and export of the vnfs SDK (included at the end of the top-level CMakeLists.txt).
#
#   cmake --install <build> --prefix P
#
# gives P/include/vnfs/** (public API and the protocol/transport headers it rests on),
# P/lib/libvnfs_{client,transport,protocol}.a, P/lib/cmake/vnfs/ (find_package(vnfs) ->
# target vnfs::client), P/lib/pkgconfig/vnfs.pc and P/bin/{vnfsd,vnfs-demo}.
# Both the CMake package and vnfs.pc locate the prefix relative to their own file, so an
# install tree can be moved (and `--prefix` at install time needs no re-configure).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The libraries a consumer links, in link order. vnfs_client's own dependencies must all be
# exported too (install(EXPORT) refuses a target that links an unexported one).
set(VNFS_EXPORTED_LIBRARIES vnfs_client vnfs_transport vnfs_protocol)
set_target_properties(vnfs_client PROPERTIES EXPORT_NAME client)
set_target_properties(vnfs_transport PROPERTIES EXPORT_NAME transport)
set_target_properties(vnfs_protocol PROPERTIES EXPORT_NAME protocol)
# In-tree code (examples) uses the same names as consumers of the installed package.
add_library(vnfs::client ALIAS vnfs_client)
add_library(vnfs::transport ALIAS vnfs_transport)
add_library(vnfs::protocol ALIAS vnfs_protocol)

install(TARGETS ${VNFS_EXPORTED_LIBRARIES}
  EXPORT vnfs-targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS vnfsd vnfs-demo RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

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
# OpenSSL is required only if some exported library links it.
set(VNFS_PC_REQUIRES "")
foreach(lib IN LISTS VNFS_EXPORTED_LIBRARIES)
  get_target_property(deps ${lib} INTERFACE_LINK_LIBRARIES)
  get_target_property(private_deps ${lib} LINK_LIBRARIES)
  if("${deps};${private_deps}" MATCHES "OpenSSL::Crypto|OpenSSL::SSL")
    set(VNFS_PC_REQUIRES "libcrypto")
  endif()
endforeach()
set(VNFS_PC_LIBS "")
foreach(lib IN LISTS VNFS_EXPORTED_LIBRARIES)
  string(APPEND VNFS_PC_LIBS " -l${lib}")
endforeach()
file(RELATIVE_PATH VNFS_PC_PREFIX_FROM_PCDIR
  /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" VNFS_PC_PREFIX_FROM_PCDIR "${VNFS_PC_PREFIX_FROM_PCDIR}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/vnfs.pc.in ${PROJECT_BINARY_DIR}/vnfs.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/vnfs.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
