from workflow_scripts.mumo.cli import main

if __name__ == "__main__":
    main()
