# QuernDependencies.cmake -- finds what quern's libraries link against.
# Included by the top-level CMakeLists.txt; the installed package repeats these
# lookups in quernConfig.cmake (cmake/quernConfig.cmake.in).
#
# Imported targets are visible only in the directory that found them and
# below. When quern is a sub-project, its libraries' link interfaces name
# CAF::core, CAF::openssl, OpenSSL::SSL, Threads::Threads,
# protobuf::libprotobuf and ZLIB::ZLIB in the parent's directories too, so the ones quern
# found itself are made global. One its parent found first is visible there
# already, and CMake refuses IMPORTED_GLOBAL on a target made in another
# directory: those are left as they are.
set(_quern_deps CAF::core CAF::io CAF::openssl OpenSSL::SSL OpenSSL::Crypto Threads::Threads
                protobuf::libprotobuf ZLIB::ZLIB)
set(_quern_deps_before "")
foreach(_quern_dep IN LISTS _quern_deps)
  if(TARGET ${_quern_dep})
    list(APPEND _quern_deps_before ${_quern_dep})
  endif()
endforeach()
find_package(CAF 0.17 REQUIRED COMPONENTS core io openssl)
if(NOT CAF_VERSION VERSION_LESS 0.18)
  message(FATAL_ERROR "quern needs CAF 0.17.x (Debian bookworm's libcaf-dev 0.17.6); "
                      "found CAF ${CAF_VERSION} in ${CAF_INCLUDE_DIR}")
endif()
find_package(Threads REQUIRED)
find_package(Protobuf REQUIRED)
find_package(OpenSSL REQUIRED)
# input/'s GZIP and ZLIB record files (Debian's zlib1g-dev).
find_package(ZLIB REQUIRED)

if(NOT QUERN_TOP_LEVEL)
  foreach(_quern_dep IN LISTS _quern_deps)
    if(TARGET ${_quern_dep} AND NOT _quern_dep IN_LIST _quern_deps_before)
      get_target_property(_quern_dep_global ${_quern_dep} IMPORTED_GLOBAL)
      if(NOT _quern_dep_global)
        set_target_properties(${_quern_dep} PROPERTIES IMPORTED_GLOBAL TRUE)
      endif()
    endif()
  endforeach()
endif()
