# quern_soak: minutes of a pipeline under random failures and stops, with
# exact accounting (`make soak`). Not a CTest test: too long for `make test`.
add_executable(quern_soak ${CMAKE_CURRENT_LIST_DIR}/soak.cpp)
target_link_libraries(quern_soak PRIVATE quern::coordination quern_command_line quern_warnings)
add_test(NAME quern_soak.bad_option COMMAND quern_soak stray)
set_tests_properties(quern_soak.bad_option PROPERTIES PASS_REGULAR_EXPRESSION
  "quern_soak: unexpected argument 'stray' \\(see --help\\)")
