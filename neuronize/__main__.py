from neuronize.cli import main

main()
