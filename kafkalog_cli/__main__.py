from kafkalog_cli.launch import main

main()
