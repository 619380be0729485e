# QuernDependencies.cmake -- finds what quern's libraries link against.
# Included by the top-level CMakeLists.txt; the installed package repeats these
# lookups in quernConfig.cmake (cmake/quernConfig.cmake.in).
#
# Imported targets are visible only in the directory that found them. When
# quern is a sub-project, its libraries' link interfaces name CAF::core,
# CAF::openssl, OpenSSL::SSL, Threads::Threads and protobuf::libprotobuf in the parent's directories too,
# so there they are made global.
find_package(CAF 0.17 REQUIRED COMPONENTS core io openssl)
if(NOT CAF_VERSION VERSION_LESS 0.18)
  message(FATAL_ERROR "quern needs CAF 0.17.x (Debian bookworm's libcaf-dev 0.17.6); "
                      "found CAF ${CAF_VERSION} in ${CAF_INCLUDE_DIR}")
endif()
find_package(Threads REQUIRED)
find_package(Protobuf REQUIRED)
find_package(OpenSSL REQUIRED)

if(NOT QUERN_TOP_LEVEL)
  foreach(_quern_dep CAF::core CAF::io CAF::openssl OpenSSL::SSL OpenSSL::Crypto
                    Threads::Threads protobuf::libprotobuf)
    if(TARGET ${_quern_dep})
      get_target_property(_quern_dep_global ${_quern_dep} IMPORTED_GLOBAL)
      if(NOT _quern_dep_global)
        set_target_properties(${_quern_dep} PROPERTIES IMPORTED_GLOBAL TRUE)
      endif()
    endif()
  endforeach()
endif()
