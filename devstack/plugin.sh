#!/bin/bash
# gpuclient's devstack plugin: installs the ``openstack gpu`` commands
# into a devstack cloud, so gpuclient can be gated on a real OpenStack (see
# doc/source/contributor/devstack.rst).
#
# devstack sources this file as "plugin.sh MODE [PHASE]" after
# devstack/settings.  gpuclient is a client: it runs no service, so only
# "stack install" (install it) and "stack extra" (check that the
# ``openstack`` command loads it and reaches Nova and Placement) do work;
# "clean" uninstalls it.

# Save trace setting
_XTRACE_GPUCLIENT=$(set +o | grep xtrace)
set -o xtrace

function install_gpuclient {
    # pip install -e $GPUCLIENT_DIR with devstack's upper constraints; it
    # pulls in python-openstackclient, osc-lib and openstacksdk if missing.
    setup_develop "$GPUCLIENT_DIR"
}

function configure_gpuclient {
    # Nothing to write: gpuclient reads the cloud from clouds.yaml like
    # any other openstack command, and nova.conf's [pci] alias is the
    # operator's (local.conf post-config for $NOVA_CONF).
    :
}

function check_gpuclient {
    if [[ -z "$GPUCLIENT_CHECK_CLOUD" ]]; then
        return 0
    fi
    # Fails stack.sh when the plugin does not load or cannot read the
    # hypervisors and their Placement providers with admin credentials.
    openstack --os-cloud "$GPUCLIENT_CHECK_CLOUD" gpu host list \
        || die $LINENO "openstack gpu host list failed against cloud" \
                       "$GPUCLIENT_CHECK_CLOUD: is gpuclient installed" \
                       "from $GPUCLIENT_DIR?"
}

function unstack_gpuclient {
    # no process to stop
    :
}

function clean_gpuclient {
    pip_uninstall gpuclient
}

if is_service_enabled gpuclient; then
    if [[ "$1" == "stack" && "$2" == "install" ]]; then
        echo_summary "Installing gpuclient"
        install_gpuclient
    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        echo_summary "Configuring gpuclient"
        configure_gpuclient
    elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
        echo_summary "Checking gpuclient"
        check_gpuclient
    fi

    if [[ "$1" == "unstack" ]]; then
        unstack_gpuclient
    fi

    if [[ "$1" == "clean" ]]; then
        clean_gpuclient
    fi
fi

# Restore xtrace
$_XTRACE_GPUCLIENT
