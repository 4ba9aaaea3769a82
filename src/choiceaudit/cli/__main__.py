from choiceaudit.cli import main

main()
