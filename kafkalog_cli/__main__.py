from kafkalog_cli.cli import main

main()
