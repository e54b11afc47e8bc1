from seenbefore.cli.launch import main

main()
