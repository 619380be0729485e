# quern_add_layer(<name> [SUBDIRS dir...] PUBLIC ... PRIVATE ...)
# One layer: the static library quern_<name> (quern::<name>, exported as
# <name>) built from every .cpp of its folder's src/ (and the subfolders
# named), its public headers in <name>/quern/.
function(quern_add_layer name)
  cmake_parse_arguments(ARG "" "" "SUBDIRS;PUBLIC;PRIVATE" ${ARGN})
  set(globs ${CMAKE_CURRENT_SOURCE_DIR}/src/*.cpp)
  foreach(sub IN LISTS ARG_SUBDIRS)
    list(APPEND globs ${CMAKE_CURRENT_SOURCE_DIR}/src/${sub}/*.cpp)
  endforeach()
  file(GLOB sources CONFIGURE_DEPENDS ${globs})
  add_library(quern_${name} ${sources})
  add_library(quern::${name} ALIAS quern_${name})
  target_include_directories(quern_${name} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  set_target_properties(quern_${name} PROPERTIES EXPORT_NAME ${name})
  target_link_libraries(quern_${name} PUBLIC ${ARG_PUBLIC}
                        PRIVATE ${ARG_PRIVATE} $<BUILD_INTERFACE:quern_warnings>)
  target_compile_features(quern_${name} PUBLIC cxx_std_17)
endfunction()
