file(GLOB quern_input_test_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_test.cpp)
quern_add_test_suite(quern_test_input
  SOURCES ${quern_input_test_sources}
  LIBS quern::input)

# A child process that takes a checkpoint and is killed (resume_test.cpp).
add_executable(quern_test_resume_child ${CMAKE_CURRENT_LIST_DIR}/resume_child.cpp)
target_link_libraries(quern_test_resume_child PRIVATE quern::input quern_warnings)
add_dependencies(quern_test_input quern_test_resume_child)
target_compile_definitions(quern_test_input PRIVATE
  QUERN_RESUME_CHILD_PATH="$<TARGET_FILE:quern_test_resume_child>")
