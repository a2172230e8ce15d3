from mcp_server.cli import main

if __name__ == "__main__":  # not when a spawned child process (the keyword index writer) imports it
    main()
