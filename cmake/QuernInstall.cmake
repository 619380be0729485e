# QuernInstall.cmake -- `cmake --install BUILD --prefix P` (or `make install
# PREFIX=P`) puts quern in P as a CMake package and a pkg-config module:
#   P/include/quern/...                 the headers of every layer
#   P/lib/libquern_*.a                  the libraries
#   P/lib/cmake/quern/                  quernConfig.cmake, its version file,
#                                       the exported targets and FindCAF.cmake
#   P/lib/pkgconfig/quern.pc            for pkg-config users
#   P/bin/quern-board                   when the tools are built
# A consumer writes find_package(quern REQUIRED) and links quern::quern (or
# one layer: quern::messages, quern::runtime, quern::queues, quern::logging,
# quern::coordination, quern::input, quern::net; quern::actors is queues and
# coordination, as the one layer of earlier releases).
include(CMakePackageConfigHelpers)

set(QUERN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/quern)

install(TARGETS quern_messages quern_runtime quern_queues quern_logging quern_coordination
                quern_actors quern_input quern_net quern
        EXPORT quernTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# Each layer's public headers live in <layer>/quern/; installed they merge
# into one include/quern/ tree, as users include them (<quern/...>).
foreach(layer messages runtime queues logging coordination input net)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${layer}/quern
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          FILES_MATCHING PATTERN "*.hpp")
endforeach()

install(EXPORT quernTargets NAMESPACE quern:: DESTINATION ${QUERN_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/quernConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/quernConfig.cmake
                              INSTALL_DESTINATION ${QUERN_CMAKE_DIR})
# 0.x: a consumer asking for 0.1 gets any 0.1.y, never 0.2 (the API may change).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/quernConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/quernConfig.cmake
              ${PROJECT_BINARY_DIR}/quernConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/FindCAF.cmake
        DESTINATION ${QUERN_CMAKE_DIR})

# pkg-config: static libraries, so Libs lists what they link against too.
# CAF (Debian's libcaf-dev) ships no .pc file; protobuf does.
file(RELATIVE_PATH QUERN_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" QUERN_PC_TO_PREFIX "${QUERN_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/quern.pc.in ${PROJECT_BINARY_DIR}/quern.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/quern.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

if(TARGET quern-board)
  install(TARGETS quern-board RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
if(TARGET quern-node)
  install(TARGETS quern-node RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
