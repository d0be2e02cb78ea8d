# `cmake --install` puts the libraries, the public headers, the tools, a CMake
# package (find_package(shardpack) -> shardpack::shardpack, shardpack::reader,
# shardpack::dataset, shardpack::backends, shardpack::remote,
# shardpack::format) and a pkg-config file (shardpack.pc) under the prefix.
# The libraries are static, so the package carries their dependencies: the
# config file finds them again (find_dependency, pkg-config) and shardpack.pc
# lists them in Requires. tests/install/ checks both from a separate project.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# What a consumer links: the reader and, through it, the format library.
add_library(shardpack_all INTERFACE)
add_library(shardpack::shardpack ALIAS shardpack_all)
set_target_properties(shardpack_all PROPERTIES EXPORT_NAME shardpack)
target_link_libraries(shardpack_all INTERFACE shardpack::reader shardpack::format)

set(shardpack_libraries shardpack_common shardpack_format shardpack_remote shardpack_codec shardpack_backends
    shardpack_dataset shardpack_reader shardpack_all)
# The Writer (shardpack/writer.h): shardpack::writer, in shardpack::shardpack too.
list(APPEND shardpack_libraries shardpack_writer)
target_link_libraries(shardpack_all INTERFACE shardpack::writer)
install(TARGETS ${shardpack_libraries}
        EXPORT shardpackTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/shardpack
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(TARGETS shardpack sharddump shardbench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(shardpack_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/shardpack)
install(EXPORT shardpackTargets NAMESPACE shardpack:: DESTINATION ${shardpack_cmake_dir})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/shardpackConfig.cmake.in
  ${PROJECT_BINARY_DIR}/shardpackConfig.cmake INSTALL_DESTINATION ${shardpack_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/shardpackConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/shardpackConfig.cmake
              ${PROJECT_BINARY_DIR}/shardpackConfigVersion.cmake
        DESTINATION ${shardpack_cmake_dir})

set(SHARDPACK_PC_REQUIRES_URING "")
if(URING_FOUND)
  set(SHARDPACK_PC_REQUIRES_URING " liburing")
endif()
# dlopen (common/shared_library.h): in libc from glibc 2.34, in libdl before.
set(SHARDPACK_PC_DL_LIBS "")
foreach(lib IN LISTS CMAKE_DL_LIBS)
  string(APPEND SHARDPACK_PC_DL_LIBS " -l${lib}")
endforeach()
# The .pc file finds the prefix from its own place (${pcfiledir}).
file(RELATIVE_PATH SHARDPACK_PC_TO_PREFIX /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
configure_file(${CMAKE_CURRENT_LIST_DIR}/shardpack.pc.in ${PROJECT_BINARY_DIR}/shardpack.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/shardpack.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
