# The user guide's programs (docs/guide.md shows each in full; the docs test
# checks the copy). CTest runs each and checks what it prints.
foreach(program tensors queues queue_runner input_pipeline)
  quern_add_example(guide_${program}
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/guide/${program}.cpp
    LIBS quern::quern)
endforeach()
if(QUERN_BUILD_TESTS AND BUILD_TESTING)
  add_test(NAME example_guide_tensors COMMAND quern_example_guide_tensors)
  set_tests_properties(example_guide_tensors PROPERTIES
    PASS_REGULAR_EXPRESSION "squares int64\\[4\\]{0, 1, 4, 9}\n(.*\n)*row 2 label 2\nqueue size 5")
  add_test(NAME example_guide_queues COMMAND quern_example_guide_queues)
  set_tests_properties(example_guide_queues PROPERTIES
    PASS_REGULAR_EXPRESSION "full: .*\ndequeue_many.2.: 1, 2\ndequeue_up_to.10. after close: 1 row.s.\ndrained: FIFOQueue '_0_numbers' is closed and has insufficient elements .requested 1, current size 0.\npadded batch shape \\[2,3\\]\npriority queue gives first\nshuffled: 4 random rows, 2 left")
  add_test(NAME example_guide_queue_runner COMMAND quern_example_guide_queue_runner)
  set_tests_properties(example_guide_queue_runner PROPERTIES
    PASS_REGULAR_EXPRESSION "trained 1000 steps. the runner's threads stopped")
  add_test(NAME example_guide_input_pipeline COMMAND quern_example_guide_input_pipeline
           WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
  set_tests_properties(example_guide_input_pipeline PROPERTIES
    PASS_REGULAR_EXPRESSION "Done training -- epoch limit reached\n20 batches, label sum 9900")
endif()
