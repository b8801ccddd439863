from airoi.cli import main

main()
