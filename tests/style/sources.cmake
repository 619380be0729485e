# The size limits of queues/, coordination/ and net/ (docs/architecture.md): no file over 500 lines,
# no function over 80, checked with clang-tidy on the build's
# compile_commands.json. The plain build checks them; the sanitizer builds
# compile the same sources.
if(NOT QUERN_SANITIZE AND NOT QUERN_TSAN)
  add_test(NAME style.layer_sizes
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/check_sizes.sh ${PROJECT_SOURCE_DIR}
                   ${PROJECT_BINARY_DIR})
  # COST: started first, not left alone at the end of a ctest -j run (it
  # takes about 17 s and was numbered last).
  set_tests_properties(style.layer_sizes PROPERTIES LABELS style TIMEOUT 600 COST 1000)
endif()
