from seenbefore.cli.app import main

main()
